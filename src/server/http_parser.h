// A strict, incremental HTTP/1.1 request parser: bytes in, one request out, no I/O.
//
// It holds the request being read and nothing else, so what a connection can make the server keep
// is bounded by Limits whatever the framing: the request line, each header line, the number of
// headers and the whole head, the body however sent (Content-Length or chunked), each chunk-size
// line and the trailers. It refuses what lets two parsers disagree on where a request ends (request
// smuggling, RFC 9112 section 11.2): bare LF line ends, obs-fold, whitespace before a header's
// colon, a Content-Length that is not plain digits or is sent twice, Content-Length together with
// Transfer-Encoding, any transfer coding but a lone "chunked", chunk data not followed by CRLF.
// A request without either header has no body (RFC 9112 section 6.3); whether its route needs one
// (411) is the server's call. Feed() never consumes past the end of the request, so pipelined
// requests that follow stay with the caller, in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fgemma::server::http {

struct Limits {
  size_t max_request_line = 8 << 10;  // bytes, without CRLF (longer: 414)
  size_t max_header_line = 8 << 10;   // one header line (longer: 431)
  size_t max_headers = 64;            // header lines (more: 431)
  size_t max_head_bytes = 32 << 10;   // request line and headers together (more: 431)
  size_t max_body = 1 << 20;          // body bytes however framed (more: 413)
  size_t max_chunk_line = 256;        // a chunk-size line with its extensions (longer: 400)
};

enum class Framing { kNone, kLength, kChunked };

struct Request {
  std::string method;  // as sent (methods are case-sensitive)
  std::string target;  // origin-form: path and query
  std::string path;    // target up to '?'
  int minor_version = 1;  // HTTP/1.<minor_version>
  std::vector<std::pair<std::string, std::string>> headers;  // names in lower case, values trimmed
  Framing framing = Framing::kNone;
  uint64_t content_length = 0;  // Framing::kLength
  std::string body;
  bool keep_alive = true;        // what the client asked for (its version's default, Connection)
  bool expect_continue = false;  // Expect: 100-continue

  // The value of the header named `lower_name` (lower case); null when absent.
  const std::string* Find(std::string_view lower_name) const;
  bool HasBody() const { return framing == Framing::kChunked || (framing == Framing::kLength && content_length > 0); }
};

struct ParseError {
  int status = 400;     // 400, 413, 414, 417, 431, 501 or 505
  std::string message;  // for the client, naming what was wrong
};

class RequestParser {
 public:
  explicit RequestParser(const Limits& limits) : limits_(limits) {}

  // Consumes a prefix of `data` and returns its length. Stops right after the head
  // (head_complete() turns true, so the caller can judge the head before any byte of the body is
  // read; call again to go on with the body), at the end of the request (complete()), and at the
  // first error (failed()). Bytes after the request are never consumed.
  size_t Feed(std::string_view data);

  bool started() const { return started_; }  // a byte of this request other than leading CRLFs
  bool head_complete() const { return head_complete_; }
  bool complete() const { return phase_ == Phase::kDone; }
  bool failed() const { return phase_ == Phase::kError; }
  const ParseError& error() const { return error_; }
  const Request& request() const { return request_; }
  Request& request() { return request_; }
  // Ready for the next request on the same connection.
  void Reset();

 private:
  enum class Phase { kRequestLine, kHeaders, kBody, kChunkSize, kChunkData, kChunkEnd, kTrailers, kDone, kError };
  // Appends `data` up to its first LF to line_; true once the line is whole. Fails (and returns
  // false) when the line grows past `limit` (without CRLF) with `status`.
  bool TakeLine(std::string_view data, size_t* used, size_t limit, int status, const char* what);
  void Fail(int status, std::string message);
  void OnRequestLine(std::string_view line);
  void OnHeaderLine(std::string_view line, bool trailer);
  void OnHeadEnd();
  void OnChunkSize(std::string_view line);

  Limits limits_;
  Phase phase_ = Phase::kRequestLine;
  Request request_;
  ParseError error_;
  std::string line_;          // the line being read (bounded by its limit)
  size_t head_bytes_ = 0;     // request line and headers so far (or trailers)
  size_t header_lines_ = 0;   // header lines (or trailer lines) so far
  uint64_t remaining_ = 0;    // body or chunk bytes still to come
  size_t crlf_seen_ = 0;      // bytes of the CRLF after chunk data seen
  bool started_ = false;
  bool head_complete_ = false;
};

}  // namespace fgemma::server::http
