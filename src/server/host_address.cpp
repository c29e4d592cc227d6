#include "server/host_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstring>

namespace fgemma::server {

bool IsLoopbackAddress(const std::string& numeric) {
  in_addr v4{};
  if (inet_pton(AF_INET, numeric.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, numeric.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  // An IPv4-mapped address reaches the IPv4 host it maps.
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

bool AllLoopback(const std::vector<std::string>& addresses) {
  if (addresses.empty()) return false;
  for (const auto& a : addresses)
    if (!IsLoopbackAddress(a)) return false;
  return true;
}

Result<std::vector<std::string>> ResolveHost(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* list = nullptr;
  const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), "0", &hints, &list);
  if (rc != 0) return InvalidArgument("--host " + host + " does not resolve: " + gai_strerror(rc));
  std::vector<std::string> out;
  for (addrinfo* ai = list; ai; ai = ai->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* addr = nullptr;
    if (ai->ai_family == AF_INET) addr = &reinterpret_cast<sockaddr_in*>(ai->ai_addr)->sin_addr;
    if (ai->ai_family == AF_INET6) addr = &reinterpret_cast<sockaddr_in6*>(ai->ai_addr)->sin6_addr;
    if (addr && inet_ntop(ai->ai_family, addr, text, sizeof text)) out.emplace_back(text);
  }
  freeaddrinfo(list);
  if (out.empty()) return InvalidArgument("--host " + host + " resolves to no IPv4 or IPv6 address");
  return out;
}

}  // namespace fgemma::server
