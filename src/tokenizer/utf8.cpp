#include "tokenizer/utf8.h"

#include <cstdint>

namespace fgemma::tokenizer_internal {
namespace {

// Expected sequence length from the lead byte, 0 for bytes that cannot start a character.
size_t SequenceLength(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// The second byte's range depends on the lead byte (RFC 3629 table): this rules out overlong forms,
// UTF-16 surrogates and code points above U+10FFFF.
bool ValidSecondByte(uint8_t lead, uint8_t b) {
  switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return b >= 0x80 && b <= 0xBF;
  }
}

bool IsContinuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// Number of bytes from s[pos] (at most `avail`) that are a valid prefix of the sequence led by s[pos].
size_t ValidPrefix(std::string_view s, size_t pos, size_t need) {
  const auto lead = static_cast<uint8_t>(s[pos]);
  size_t i = 1;
  for (; i < need && pos + i < s.size(); ++i) {
    const auto b = static_cast<uint8_t>(s[pos + i]);
    if (i == 1 ? !ValidSecondByte(lead, b) : !IsContinuation(b)) break;
  }
  return i;
}

}  // namespace

void AppendUtf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t Utf8CharLength(std::string_view s, size_t pos) {
  if (pos >= s.size()) return 0;
  const size_t need = SequenceLength(static_cast<uint8_t>(s[pos]));
  if (need <= 1) return need;
  return ValidPrefix(s, pos, need) == need ? need : 0;
}

char32_t Utf8Decode(std::string_view s, size_t pos, size_t len) {
  static constexpr uint8_t kLeadMask[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  char32_t cp = static_cast<uint8_t>(s[pos]) & kLeadMask[len];
  for (size_t i = 1; i < len; ++i) cp = (cp << 6) | (static_cast<uint8_t>(s[pos + i]) & 0x3F);
  return cp;
}

size_t Utf8IncompleteSuffix(std::string_view s) {
  // A character is at most 4 bytes, so only a lead byte among the last 3 can start an unfinished one.
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const size_t pos = n - back;
    const auto b = static_cast<uint8_t>(s[pos]);
    if (IsContinuation(b)) continue;
    const size_t need = SequenceLength(b);
    if (need <= back) return 0;  // ASCII, invalid lead, or a sequence that already had room to finish
    return ValidPrefix(s, pos, need) == back ? back : 0;
  }
  return 0;
}

}  // namespace fgemma::tokenizer_internal
