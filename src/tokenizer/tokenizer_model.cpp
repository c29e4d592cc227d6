#include "tokenizer/tokenizer_model.h"

#include <bit>
#include <cstdio>

namespace fgemma::tokenizer_internal {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // "▁" U+2581

uint64_t HashText(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a: token strings are short, so a byte loop is enough
  for (char c : s) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string ByteTokenName(int b) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
  return buf;
}

void BuildTextIndex(TokenizerModel& m) {
  const size_t capacity = std::bit_ceil(static_cast<size_t>(m.size()) * 2 + 16);
  m.text_slots.assign(capacity, -1);
  const size_t mask = capacity - 1;
  for (int32_t id = 0; id < m.size(); ++id) {
    const std::string_view text = m.Text(id);
    for (size_t i = HashText(text) & mask;; i = (i + 1) & mask) {
      const int32_t other = m.text_slots[i];
      if (other < 0) {
        m.text_slots[i] = id;
        break;
      }
      if (m.Text(other) == text) break;  // duplicate string: the lowest id answers lookups
    }
  }
}

void BuildPieces(TokenizerModel& m) {
  m.pieces.clear();
  m.pieces.reserve(m.texts.size());
  m.piece_offsets.assign(1, 0);
  for (int32_t id = 0; id < m.size(); ++id) {
    const std::string_view text = m.Text(id);
    if (m.flags[id] & kFlagByte) {
      m.pieces.push_back(static_cast<char>(ParseByteToken(text)));
    } else {
      for (size_t i = 0; i < text.size();) {
        if (text.compare(i, kSpaceMarker.size(), kSpaceMarker) == 0) {
          m.pieces.push_back(' ');
          i += kSpaceMarker.size();
        } else {
          m.pieces.push_back(text[i++]);
        }
      }
    }
    m.piece_offsets.push_back(static_cast<uint32_t>(m.pieces.size()));
  }
}

}  // namespace

int32_t TokenizerModel::Find(std::string_view text) const {
  if (text_slots.empty()) return -1;
  const size_t mask = text_slots.size() - 1;
  for (size_t i = HashText(text) & mask;; i = (i + 1) & mask) {
    const int32_t id = text_slots[i];
    if (id < 0 || Text(id) == text) return id;
  }
}

bool IsWhitespaceToken(std::string_view text) {
  if (text.empty()) return false;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, kSpaceMarker.size(), kSpaceMarker) == 0) {
      i += kSpaceMarker.size();
    } else if (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r') {
      ++i;
    } else {
      return false;
    }
  }
  return true;
}

int ParseByteToken(std::string_view text) {
  // Exactly Hugging Face's spelling, format!("<{:#04X}>"): "<0x0A>", upper-case digits.
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  const int hi = HexDigit(text[3]);
  const int lo = HexDigit(text[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

Status FinishModel(TokenizerModel& m, const std::string& what) {
  if (m.size() == 0) return CorruptFile(what + ": the vocabulary is empty");
  if (m.texts.size() > UINT32_MAX - 1) return OutOfRange(what + ": token strings exceed 4 GiB");
  BuildTextIndex(m);

  m.byte_ids.fill(-1);
  for (int32_t id = 0; id < m.size(); ++id) {
    if ((m.flags[id] & kFlagByte) == 0) continue;
    const int b = ParseByteToken(m.Text(id));
    if (b < 0) return CorruptFile(what + ": byte token " + std::to_string(id) + " is spelled \"" +
                                  std::string(m.Text(id)) + "\", expected <0xNN>");
    if (m.byte_ids[b] < 0) m.byte_ids[b] = id;
  }
  for (int b = 0; b < 256; ++b) {
    // Every byte needs a token, or some text would have no lossless encoding.
    if (m.byte_ids[b] < 0)
      return Unsupported(what + ": byte fallback needs all 256 byte tokens, but " + ByteTokenName(b) + " is missing");
  }
  BuildPieces(m);

  for (int c = 0; c < 128; ++c) {
    const int32_t id = m.Find(std::string(1, static_cast<char>(c)));
    m.ascii_ids[c] = id >= 0 && m.BpeUsable(id) ? id : -1;
  }

  m.added = AddedTokenMatcher();
  for (int32_t id = 0; id < m.size(); ++id) {
    if (m.flags[id] & kFlagAdded) m.added.Add(m.Text(id), id, (m.flags[id] & kFlagPlain) != 0);
  }
  m.added.Finish();

  auto check_id = [&](int32_t id, const char* field) -> Status {
    if (id < -1 || id >= m.size())
      return CorruptFile(what + ": " + field + " " + std::to_string(id) + " is outside the vocabulary of " +
                         std::to_string(m.size()));
    return Status::Ok();
  };
  FGEMMA_RETURN_IF_ERROR(check_id(m.bos_id, "bos id"));
  FGEMMA_RETURN_IF_ERROR(check_id(m.unk_id, "unk id"));
  for (int32_t id : m.eos_ids) {
    if (id < 0) return CorruptFile(what + ": eos id " + std::to_string(id) + " is negative");
    FGEMMA_RETURN_IF_ERROR(check_id(id, "eos id"));
  }
  return Status::Ok();
}

}  // namespace fgemma::tokenizer_internal
