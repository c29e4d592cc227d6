#include "chat/py_text.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace fgemma::py {
namespace {

struct LowerRun {
  uint32_t first;
  uint32_t count;
  uint32_t stride;
  int32_t delta;
};

constexpr LowerRun kLowerRuns[] = {
#include "chat/unicode_lower_table.inc"
};

char32_t LowerOne(char32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  for (const LowerRun& r : kLowerRuns) {
    if (cp < r.first) break;  // runs are sorted by first code point
    const uint32_t offset = static_cast<uint32_t>(cp) - r.first;
    if (offset % r.stride == 0 && offset / r.stride < r.count) return static_cast<char32_t>(static_cast<int32_t>(cp) + r.delta);
  }
  return cp;
}

}  // namespace

char32_t DecodeUtf8(std::string_view s, size_t* pos) {
  const auto b0 = static_cast<unsigned char>(s[*pos]);
  int len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xe ? 3 : (b0 >> 3) == 0x1e ? 4 : 0;
  if (len == 0 || *pos + static_cast<size_t>(len) > s.size()) {
    ++*pos;
    return b0;
  }
  char32_t cp = len == 1 ? b0 : len == 2 ? (b0 & 0x1f) : len == 3 ? (b0 & 0x0f) : (b0 & 0x07);
  for (int i = 1; i < len; ++i) {
    const auto b = static_cast<unsigned char>(s[*pos + static_cast<size_t>(i)]);
    if ((b & 0xc0) != 0x80) {
      ++*pos;
      return b0;
    }
    cp = (cp << 6) | (b & 0x3f);
  }
  *pos += static_cast<size_t>(len);
  return cp;
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

std::string FloatRepr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
  // Shortest round-trip digits in scientific form "d.ddde+XX", then laid out the way CPython's
  // float_repr_style 'short' does.
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
  std::string out;
  if (sci.front() == '-') {
    out.push_back('-');
    sci.remove_prefix(1);
  }
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos)) {
    if (c != '.') digits.push_back(c);
  }
  const int exponent = std::atoi(std::string(sci.substr(e_pos + 1)).c_str());
  const int decpt = exponent + 1;  // position of the decimal point relative to the first digit
  const int ndigits = static_cast<int>(digits.size());
  // Built with append: GCC 12 warns falsely (-Wrestrict) on `"literal" + std::string` here.
  if (decpt <= -4 || decpt > 16) {
    out.push_back(digits[0]);
    if (ndigits > 1) out.append(".").append(digits, 1);
    const int e = decpt - 1;
    out.append(e < 0 ? "e-" : "e+");
    const int mag = std::abs(e);
    if (mag < 10) out.push_back('0');
    out.append(std::to_string(mag));
  } else if (decpt <= 0) {
    out.append("0.").append(static_cast<size_t>(-decpt), '0').append(digits);
  } else if (decpt >= ndigits) {
    out.append(digits).append(static_cast<size_t>(decpt - ndigits), '0').append(".0");
  } else {
    out.append(digits, 0, static_cast<size_t>(decpt)).append(".").append(digits, static_cast<size_t>(decpt));
  }
  return out;
}

bool IsSpace(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f ||
         cp == 0x3000;
}

std::string Strip(std::string_view text) {
  size_t begin = 0;
  while (begin < text.size()) {
    size_t next = begin;
    if (!IsSpace(DecodeUtf8(text, &next))) break;
    begin = next;
  }
  size_t end = begin;  // one past the last non-space code point
  for (size_t pos = begin; pos < text.size();) {
    if (!IsSpace(DecodeUtf8(text, &pos))) end = pos;
  }
  return std::string(text.substr(begin, end - begin));
}

std::string Lower(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t start = pos;
    const char32_t cp = DecodeUtf8(text, &pos);
    if (cp == 0x130) {  // the one code point whose lowercase is two: LATIN CAPITAL I WITH DOT ABOVE
      out += "i\xcc\x87";
      continue;
    }
    const char32_t low = LowerOne(cp);
    if (low == cp) {  // unchanged (also keeps an invalid byte as it was)
      out.append(text.substr(start, pos - start));
      continue;
    }
    AppendUtf8(low, &out);
  }
  return out;
}

std::vector<std::string_view> CodePoints(std::string_view text) {
  std::vector<std::string_view> out;
  for (size_t pos = 0; pos < text.size();) {
    const size_t start = pos;
    DecodeUtf8(text, &pos);
    out.push_back(text.substr(start, pos - start));
  }
  return out;
}

}  // namespace fgemma::py
