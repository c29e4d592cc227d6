#include "server/http_parser.h"

#include <algorithm>
#include <cstring>

namespace fgemma::server::http {
namespace {

// RFC 9110 section 5.6.2 tchar: what a method, a header name or a transfer coding may hold.
bool IsTokenChar(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  return c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (!IsTokenChar(c)) return false;
  return true;
}

// Field values: visible ASCII, space, tab and obs-text; never CR, LF, NUL or another control.
bool IsFieldValueChar(unsigned char c) { return c == '\t' || (c >= 0x20 && c != 0x7f); }

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Whether the comma-separated list `value` holds `token` (case-insensitive).
bool ListHas(const std::string& value, std::string_view token) {
  size_t pos = 0;
  while (pos <= value.size()) {
    size_t comma = value.find(',', pos);
    if (comma == std::string::npos) comma = value.size();
    if (Lower(TrimSpaces(std::string_view(value).substr(pos, comma - pos))) == token) return true;
    pos = comma + 1;
  }
  return false;
}

}  // namespace

const std::string* Request::Find(std::string_view lower_name) const {
  for (const auto& [name, value] : headers)
    if (name == lower_name) return &value;
  return nullptr;
}

void RequestParser::Reset() {
  phase_ = Phase::kRequestLine;
  request_ = Request{};
  error_ = ParseError{};
  line_.clear();
  head_bytes_ = header_lines_ = crlf_seen_ = 0;
  remaining_ = 0;
  started_ = head_complete_ = false;
}

void RequestParser::Fail(int status, std::string message) {
  phase_ = Phase::kError;
  error_ = {status, std::move(message)};
  line_.clear();
  line_.shrink_to_fit();
}

bool RequestParser::TakeLine(std::string_view data, size_t* used, size_t limit, int status, const char* what) {
  const void* lf = std::memchr(data.data(), '\n', data.size());
  const size_t take = lf ? static_cast<size_t>(static_cast<const char*>(lf) - data.data()) + 1 : data.size();
  *used = take;
  // The line may hold `limit` bytes plus its CRLF.
  if (line_.size() + take > limit + 2 || (!lf && line_.size() + take > limit + 1)) {
    *used = std::min(take, limit + 2 - std::min(limit + 2, line_.size()));  // read up to the limit, no further
    Fail(status, std::string(what) + " longer than " + std::to_string(limit) + " bytes");
    return false;
  }
  line_.append(data.data(), take);
  if (!lf) return false;
  if (line_.size() < 2 || line_[line_.size() - 2] != '\r') {
    Fail(400, std::string(what) + " ends in a bare LF (CRLF required)");
    return false;
  }
  line_.resize(line_.size() - 2);
  return true;
}

size_t RequestParser::Feed(std::string_view data) {
  size_t pos = 0;
  while (pos < data.size() && phase_ != Phase::kDone && phase_ != Phase::kError) {
    const std::string_view rest = data.substr(pos);
    size_t used = 0;
    switch (phase_) {
      case Phase::kRequestLine:
      case Phase::kHeaders:
      case Phase::kTrailers: {
        const bool request_line = phase_ == Phase::kRequestLine;
        // Leading empty lines before a request are skipped (RFC 9112 section 2.2), counted
        // against the head's limit like everything else.
        if (request_line && !started_) {
          if (line_.empty() && rest.front() != '\r' && rest.front() != '\n') started_ = true;
        }
        // Never past the first byte over the head's limit, so that which limit a request meets
        // first does not depend on how its bytes were split into reads.
        const std::string_view capped =
            rest.substr(0, limits_.max_head_bytes - std::min(head_bytes_, limits_.max_head_bytes) + 1);
        const bool whole = request_line ? TakeLine(capped, &used, limits_.max_request_line, 414, "request line")
                                        : TakeLine(capped, &used, limits_.max_header_line, 431, "header line");
        pos += used;
        head_bytes_ += used;
        if (phase_ == Phase::kError) break;
        if (head_bytes_ > limits_.max_head_bytes) {
          Fail(431, std::string(phase_ == Phase::kTrailers ? "trailers" : "request head") + " longer than " +
                        std::to_string(limits_.max_head_bytes) + " bytes");
          break;
        }
        if (!whole) break;
        std::string line = std::move(line_);
        line_.clear();
        if (request_line) {
          if (line.empty() && !started_) continue;  // a leading CRLF
          started_ = true;
          OnRequestLine(line);
        } else if (line.empty()) {
          if (phase_ == Phase::kTrailers) {
            phase_ = Phase::kDone;
          } else {
            OnHeadEnd();
            if (phase_ != Phase::kError) return pos;  // the caller judges the head first
          }
        } else {
          OnHeaderLine(line, phase_ == Phase::kTrailers);
        }
        break;
      }
      case Phase::kBody:
      case Phase::kChunkData: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, rest.size()));
        request_.body.append(rest.data(), n);
        remaining_ -= n;
        pos += n;
        if (remaining_ == 0) phase_ = phase_ == Phase::kBody ? Phase::kDone : Phase::kChunkEnd;
        break;
      }
      case Phase::kChunkEnd: {
        const char want = crlf_seen_ == 0 ? '\r' : '\n';
        if (rest.front() != want) {
          Fail(400, "chunk data not followed by CRLF");
          break;
        }
        ++pos;
        if (++crlf_seen_ == 2) {
          crlf_seen_ = 0;
          phase_ = Phase::kChunkSize;
        }
        break;
      }
      case Phase::kChunkSize: {
        const bool whole = TakeLine(rest, &used, limits_.max_chunk_line, 400, "chunk-size line");
        pos += used;
        if (!whole) break;
        std::string line = std::move(line_);
        line_.clear();
        OnChunkSize(line);
        break;
      }
      case Phase::kDone:
      case Phase::kError:
        break;
    }
  }
  return pos;
}

void RequestParser::OnRequestLine(std::string_view line) {
  // method SP request-target SP HTTP-version, single spaces (RFC 9112 section 3).
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return Fail(400, "malformed request line (expected: METHOD /path HTTP/1.1)");
  const std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                         version = line.substr(sp2 + 1);
  if (!IsToken(method)) return Fail(400, "malformed request method");
  if (target.empty() || target.front() != '/') return Fail(400, "request target must be a path starting with '/'");
  for (unsigned char c : target)
    if (c <= 0x20 || c >= 0x7f) return Fail(400, "request target holds a byte that is not visible ASCII");
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' || version[5] < '0' ||
      version[5] > '9' || version[7] < '0' || version[7] > '9')
    return Fail(400, "malformed HTTP version");
  if (version[5] != '1') return Fail(505, "HTTP version " + std::string(version.substr(5)) + " not supported (HTTP/1.1 only)");
  request_.method = method;
  request_.target = target;
  request_.path = target.substr(0, target.find('?'));
  request_.minor_version = version[7] - '0';
  request_.keep_alive = request_.minor_version >= 1;
  phase_ = Phase::kHeaders;
}

void RequestParser::OnHeaderLine(std::string_view line, bool trailer) {
  if (++header_lines_ > limits_.max_headers)
    return Fail(431, std::string(trailer ? "more than " : "more than ") + std::to_string(limits_.max_headers) +
                         (trailer ? " trailer lines" : " header lines"));
  if (line.front() == ' ' || line.front() == '\t') return Fail(400, "obsolete line folding in a header");
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return Fail(400, "header line without ':'");
  const std::string_view name = line.substr(0, colon);
  if (!IsToken(name)) return Fail(400, "malformed header name (no space is allowed before ':')");
  const std::string_view value = TrimSpaces(line.substr(colon + 1));
  for (unsigned char c : value)
    if (!IsFieldValueChar(c)) return Fail(400, "header " + std::string(name) + " holds a control character");
  if (trailer) return;  // trailers are checked, never used
  request_.headers.emplace_back(Lower(name), std::string(value));
}

void RequestParser::OnHeadEnd() {
  Request& r = request_;
  size_t hosts = 0, lengths = 0, encodings = 0;
  const std::string *length = nullptr, *encoding = nullptr;
  for (const auto& [name, value] : r.headers) {
    if (name == "host") ++hosts;
    if (name == "content-length") ++lengths, length = &value;
    if (name == "transfer-encoding") ++encodings, encoding = &value;
    if (name == "connection") {
      if (ListHas(value, "close")) r.keep_alive = false;
      if (r.minor_version == 0 && ListHas(value, "keep-alive")) r.keep_alive = true;
    }
    if (name == "expect") {
      if (Lower(value) != "100-continue") return Fail(417, "Expect: only 100-continue is understood");
      r.expect_continue = true;
    }
  }
  if (r.minor_version >= 1 && hosts != 1) return Fail(400, hosts ? "more than one Host header" : "missing Host header");
  if (hosts > 1) return Fail(400, "more than one Host header");
  if (encodings > 0 && lengths > 0) return Fail(400, "both Content-Length and Transfer-Encoding (refused)");
  if (lengths > 1) return Fail(400, "more than one Content-Length header");
  if (encodings > 1) return Fail(400, "more than one Transfer-Encoding header");
  if (encoding) {
    if (r.minor_version == 0) return Fail(400, "Transfer-Encoding in an HTTP/1.0 request");
    if (Lower(*encoding) != "chunked")
      return Fail(501, "Transfer-Encoding \"" + *encoding + "\" not supported (only chunked)");
    r.framing = Framing::kChunked;
    phase_ = Phase::kChunkSize;
  } else if (length) {
    // 1*DIGIT only: no sign, no spaces inside, no list.
    if (length->empty()) return Fail(400, "empty Content-Length");
    uint64_t n = 0;
    for (char c : *length) {
      if (c < '0' || c > '9') return Fail(400, "Content-Length must be a decimal number of bytes");
      if (n > (limits_.max_body + 1) * 10) continue;  // already far past the limit; keep checking digits
      n = n * 10 + static_cast<uint64_t>(c - '0');
    }
    if (n > limits_.max_body)
      return Fail(413, "request body exceeds --max-body " + std::to_string(limits_.max_body) + " bytes");
    r.framing = Framing::kLength;
    r.content_length = n;
    remaining_ = n;
    phase_ = n ? Phase::kBody : Phase::kDone;
  } else {
    phase_ = Phase::kDone;
  }
  head_bytes_ = header_lines_ = 0;  // from here on they count trailers
  head_complete_ = true;
}

void RequestParser::OnChunkSize(std::string_view line) {
  // chunk-size [ ; chunk-ext ]: 1*HEXDIG, then nothing or extensions (read, never used).
  size_t digits = 0;
  uint64_t size = 0;
  while (digits < line.size() && HexValue(line[digits]) >= 0) {
    if (size > (uint64_t{1} << 40)) return Fail(413, "chunk size too large");
    size = size * 16 + static_cast<uint64_t>(HexValue(line[digits]));
    ++digits;
  }
  if (digits == 0) return Fail(400, "malformed chunk size");
  std::string_view ext = line.substr(digits);
  while (!ext.empty() && (ext.front() == ' ' || ext.front() == '\t')) ext.remove_prefix(1);
  if (!ext.empty()) {
    if (ext.front() != ';') return Fail(400, "malformed chunk size");
    for (unsigned char c : ext)
      if (!IsFieldValueChar(c)) return Fail(400, "control character in a chunk extension");
  }
  if (size == 0) {
    phase_ = Phase::kTrailers;
    return;
  }
  if (request_.body.size() + size > limits_.max_body)
    return Fail(413, "request body exceeds --max-body " + std::to_string(limits_.max_body) + " bytes");
  remaining_ = size;
  phase_ = Phase::kChunkData;
}

}  // namespace fgemma::server::http
