#include "tokenizer/json_scanner.h"

#include <cstring>

#include "tokenizer/utf8.h"

namespace fgemma::tokenizer_internal {
namespace {

bool IsWhitespace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Whether any of 8 bytes is '"', '\\', below 0x20 or at least 0x80 (bit tricks on one 64-bit word;
// a byte after a true hit may be flagged too, which only ends the fast path early).
bool HasSpecialByte(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  auto has_zero = [&](uint64_t x) { return (x - kOnes) & ~x & kHigh; };
  const uint64_t below_space = (v - 0x20 * kOnes) & ~v & kHigh;
  return (has_zero(v ^ (0x22 * kOnes)) | has_zero(v ^ (0x5C * kOnes)) | below_space | (v & kHigh)) != 0;
}

}  // namespace

Status JsonScanner::Error(const std::string& message) const {
  std::string where = what_;
  if (!field_.empty()) where += ": " + field_;
  return CorruptFile(where + ": byte " + std::to_string(pos_) + ": " + message);
}

char JsonScanner::Peek() {
  while (pos_ < text_.size() && IsWhitespace(text_[pos_])) ++pos_;
  return pos_ < text_.size() ? text_[pos_] : '\0';
}

Status JsonScanner::Expect(char c) {
  const char got = Peek();
  if (pos_ >= text_.size()) return Error(std::string("expected '") + c + "' but the text ends");
  if (got != c) return Error(std::string("expected '") + c + "', found '" + got + "'");
  ++pos_;
  return Status::Ok();
}

Status JsonScanner::ReadHex4(uint32_t& out) {
  if (pos_ + 4 > text_.size()) return Error("truncated \\u escape");
  out = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = text_[pos_++];
    uint32_t v;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      v = c - 'A' + 10;
    } else {
      return Error("bad hex digit in \\u escape");
    }
    out = out * 16 + v;
  }
  return Status::Ok();
}

Status JsonScanner::ReadEscape(std::string& out) {
  if (pos_ >= text_.size()) return Error("truncated escape");
  const char c = text_[pos_++];
  switch (c) {
    case '"': out.push_back('"'); return Status::Ok();
    case '\\': out.push_back('\\'); return Status::Ok();
    case '/': out.push_back('/'); return Status::Ok();
    case 'b': out.push_back('\b'); return Status::Ok();
    case 'f': out.push_back('\f'); return Status::Ok();
    case 'n': out.push_back('\n'); return Status::Ok();
    case 'r': out.push_back('\r'); return Status::Ok();
    case 't': out.push_back('\t'); return Status::Ok();
    case 'u': break;
    default: return Error(std::string("unknown escape \\") + c);
  }
  uint32_t cp;
  FGEMMA_RETURN_IF_ERROR(ReadHex4(cp));
  if (cp >= 0xDC00 && cp <= 0xDFFF) return Error("lone low surrogate in \\u escape");
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    uint32_t low;
    if (pos_ + 2 > text_.size() || text_[pos_] != '\\' || text_[pos_ + 1] != 'u')
      return Error("high surrogate not followed by a low surrogate");
    pos_ += 2;
    FGEMMA_RETURN_IF_ERROR(ReadHex4(low));
    if (low < 0xDC00 || low > 0xDFFF) return Error("high surrogate not followed by a low surrogate");
    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
  }
  AppendUtf8(cp, out);
  return Status::Ok();
}

Status JsonScanner::ReadString(std::string& out) {
  out.clear();
  return AppendString(out);
}

Status JsonScanner::AppendString(std::string& out) {
  if (Peek() != '"') return pos_ >= text_.size() ? Error("expected a string but the text ends") : Error("expected a string");
  ++pos_;
  for (;;) {
    // Copy the run of ordinary bytes in one go; stop at the quote, an escape, or a byte to check.
    // Eight bytes at a time while none of them is special (the vocabulary is 14 MB of strings).
    size_t run = pos_;
    while (run + 8 <= text_.size() && !HasSpecialByte(text_.data() + run)) run += 8;
    while (run < text_.size()) {
      const auto b = static_cast<uint8_t>(text_[run]);
      if (b == '"' || b == '\\' || b < 0x20 || b >= 0x80) break;
      ++run;
    }
    out.append(text_.data() + pos_, run - pos_);
    pos_ = run;
    if (pos_ >= text_.size()) return Error("unterminated string");
    const auto b = static_cast<uint8_t>(text_[pos_]);
    if (b == '"') {
      ++pos_;
      return Status::Ok();
    }
    if (b == '\\') {
      ++pos_;
      FGEMMA_RETURN_IF_ERROR(ReadEscape(out));
    } else if (b < 0x20) {
      return Error("control character in string");
    } else {
      const size_t len = Utf8CharLength(text_, pos_);
      if (len == 0) return Error("invalid UTF-8 in string");
      out.append(text_.data() + pos_, len);
      pos_ += len;
    }
  }
}

Status JsonScanner::ReadInt(int64_t& out) {
  Peek();
  const size_t start = pos_;
  bool negative = false;
  if (pos_ < text_.size() && text_[pos_] == '-') {
    negative = true;
    ++pos_;
  }
  if (pos_ >= text_.size() || !IsDigit(text_[pos_])) return Error("expected an integer");
  int64_t value = 0;
  while (pos_ < text_.size() && IsDigit(text_[pos_])) {
    if (value > (INT64_MAX - 9) / 10) return Error("integer too large");
    value = value * 10 + (text_[pos_++] - '0');
  }
  if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E')) {
    pos_ = start;
    return Error("expected an integer, found a fraction or exponent");
  }
  out = negative ? -value : value;
  return Status::Ok();
}

Status JsonScanner::ReadBool(bool& out) {
  Peek();
  if (text_.substr(pos_, 4) == "true") {
    pos_ += 4;
    out = true;
    return Status::Ok();
  }
  if (text_.substr(pos_, 5) == "false") {
    pos_ += 5;
    out = false;
    return Status::Ok();
  }
  return Error("expected true or false");
}

Status JsonScanner::SkipNumber() {
  if (text_[pos_] == '-') ++pos_;
  if (pos_ >= text_.size() || !IsDigit(text_[pos_])) return Error("malformed number");
  if (text_[pos_] == '0') {
    ++pos_;
  } else {
    while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
  }
  if (pos_ < text_.size() && text_[pos_] == '.') {
    ++pos_;
    if (pos_ >= text_.size() || !IsDigit(text_[pos_])) return Error("malformed number");
    while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
  }
  if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    ++pos_;
    if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
    if (pos_ >= text_.size() || !IsDigit(text_[pos_])) return Error("malformed number");
    while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
  }
  return Status::Ok();
}

Status JsonScanner::Open(char bracket) {
  if (Peek() == bracket && depth_ >= max_depth_)
    return Error("JSON nested deeper than " + std::to_string(max_depth_) + " levels");
  FGEMMA_RETURN_IF_ERROR(Expect(bracket));
  ++depth_;
  return Status::Ok();
}

// Recurses once per level of nesting, which Open bounds (max_depth_).
Status JsonScanner::SkipValue() {
  const char c = Peek();
  std::string scratch;
  switch (c) {
    case '"': return ReadString(scratch);
    case '{': return ForEachMember([&](const std::string&) { return SkipValue(); });
    case '[': return ForEachElement([&](size_t) { return SkipValue(); });
    case 't':
    case 'f': {
      bool ignored;
      return ReadBool(ignored);
    }
    case 'n':
      if (text_.substr(pos_, 4) != "null") return Error("expected a value");
      pos_ += 4;
      return Status::Ok();
    case '\0':
      if (pos_ >= text_.size()) return Error("expected a value but the text ends");
      return Error("unexpected NUL byte");
    default:
      if (c == '-' || IsDigit(c)) return SkipNumber();
      return Error(std::string("expected a value, found '") + c + "'");
  }
}

Status JsonScanner::RawValue(std::string_view& out) {
  Peek();
  const size_t start = pos_;
  FGEMMA_RETURN_IF_ERROR(SkipValue());
  out = text_.substr(start, pos_ - start);
  return Status::Ok();
}

Status JsonScanner::ExpectEnd() {
  if (Peek() != '\0' || pos_ < text_.size()) return Error("unexpected text after the JSON document");
  return Status::Ok();
}

}  // namespace fgemma::tokenizer_internal
