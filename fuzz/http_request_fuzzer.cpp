// libFuzzer harness for the server's HTTP/1.1 request parser (src/server/http_parser.h), with small
// limits so they are reached. The first byte picks how the rest is cut into reads; the same bytes
// fed whole and fed in those pieces must give the same requests and the same verdict, no request
// may hold more than its limits, and a parser never consumes past the end of a request.
// Seeds: fuzz/corpus/http_request/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "server/http_parser.h"

namespace {

using fgemma::server::http::Limits;
using fgemma::server::http::RequestParser;

// What a connection would see: each request's method, target, body and headers in order, then
// the final verdict (error status, or -1 when the input ran out mid-request, 0 when it ended
// between requests).
std::string Run(std::string_view input, size_t piece, const Limits& limits) {
  RequestParser parser(limits);
  std::string trace;
  size_t pos = 0;
  std::string_view pending;
  while (true) {
    if (pending.empty()) {
      if (pos >= input.size()) break;
      pending = input.substr(pos, piece);
      pos += pending.size();
    }
    const size_t used = parser.Feed(pending);
    if (used > pending.size()) std::abort();
    pending.remove_prefix(used);
    if (parser.failed()) {
      trace += "error " + std::to_string(parser.error().status) + " " + parser.error().message;
      return trace;
    }
    if (parser.complete()) {
      const auto& r = parser.request();
      if (r.body.size() > limits.max_body || r.headers.size() > limits.max_headers) std::abort();
      trace += r.method + " " + r.target + " " + std::to_string(r.body.size()) + ":" + r.body + "|";
      for (const auto& [name, value] : r.headers) trace += name + "=" + value + ";";
      trace += "\n";
      parser.Reset();
    } else if (used == 0 && !parser.head_complete()) {
      std::abort();  // no progress on non-empty input
    }
  }
  trace += parser.started() || parser.head_complete() ? "partial" : "end";
  return trace;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Limits limits;
  limits.max_request_line = 128;
  limits.max_header_line = 128;
  limits.max_headers = 8;
  limits.max_head_bytes = 512;
  limits.max_body = 256;
  limits.max_chunk_line = 32;
  const std::string_view input = fgemma::fuzz::AsText(data + 1, size - 1);
  const size_t piece = 1 + data[0] % 17;
  const std::string whole = Run(input, input.size() + 1, limits);
  const std::string pieces = Run(input, piece, limits);
  if (whole != pieces) std::abort();
  return 0;
}
