// Small HTTP rules of the server, kept apart from httplib so they can be tested on their own.
#pragma once

#include <string>

namespace fgemma::server {

// The request bodies the server reads: application/json, optionally with parameters of which only
// charset=utf-8 (any case, optionally quoted) is understood; a missing Content-Type is read as
// JSON too (plain `curl -H` users, scripts). Anything else (forms, multipart, text, other
// charsets) is refused with 415 before the body is read.
bool IsJsonContentType(const std::string& content_type);

}  // namespace fgemma::server
