// Which addresses a --host names, and whether every one of them is loopback.
//
// "Loopback needs no API key" must be decided on the addresses the server will actually bind, not
// on the spelling of the name: `127.0.0.1.attacker.example` starts with "127." but resolves
// wherever its owner likes. So the name is resolved first and the rule holds only when every
// resolved address is loopback (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104).
#pragma once

#include <string>
#include <vector>

#include "util/status.h"

namespace fgemma::server {

// True for a numeric IPv4 or IPv6 address in a loopback range; false for anything else (names,
// malformed text, other addresses).
bool IsLoopbackAddress(const std::string& numeric);
// True when `addresses` is not empty and every one is loopback.
bool AllLoopback(const std::vector<std::string>& addresses);
// The numeric addresses `host` resolves to (getaddrinfo, passive, TCP); an error naming the host
// when it does not resolve.
Result<std::vector<std::string>> ResolveHost(const std::string& host);

}  // namespace fgemma::server
