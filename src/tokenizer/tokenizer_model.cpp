#include "tokenizer/tokenizer_model.h"

#include <bit>
#include <algorithm>
#include <atomic>
#include <cstdio>

#include "tokenizer/text_hash.h"
#include "tokenizer/utf8.h"

namespace fgemma::tokenizer_internal {
namespace {

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

uint64_t SlotFor(uint64_t hash, int32_t id) { return (hash >> 32 << 32) | static_cast<uint32_t>(id); }

void BuildTextIndex(TokenizerModel& m) {
  const size_t capacity = std::bit_ceil(static_cast<size_t>(m.size()) * 2 + 16);
  m.text_slots.assign(capacity, TokenizerModel::kEmptySlot);
  const size_t mask = capacity - 1;
  for (int32_t id = 0; id < m.size(); ++id) {
    const std::string_view text = m.Text(id);
    const uint64_t hash = HashText(text);
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const uint64_t slot = m.text_slots[i];
      if (slot == TokenizerModel::kEmptySlot) {
        m.text_slots[i] = SlotFor(hash, id);
        break;
      }
      // A duplicate string keeps the lowest id for lookups.
      if ((slot >> 32) == (hash >> 32) && m.Text(static_cast<int32_t>(slot & 0xFFFFFFFFu)) == text) break;
    }
  }
}

void BuildPieces(TokenizerModel& m) {
  m.pieces.clear();
  m.pieces.reserve(m.texts.size());
  m.piece_offsets.assign(1, 0);
  m.piece_offsets.reserve(static_cast<size_t>(m.size()) + 1);
  for (int32_t id = 0; id < m.size(); ++id) {
    const std::string_view text = m.Text(id);
    if (m.flags[id] & kFlagByte) {
      m.pieces.push_back(static_cast<char>(ParseByteToken(text)));
    } else {
      size_t done = 0;
      for (size_t p; (p = text.find(kSpaceMarker, done)) != std::string_view::npos; done = p + kSpaceMarker.size()) {
        m.pieces.append(text.substr(done, p - done)).push_back(' ');
      }
      m.pieces.append(text.substr(done));
    }
    m.piece_offsets.push_back(static_cast<uint32_t>(m.pieces.size()));
  }
}

// The character that ends text[0, end), as the encoder would split it: a well-formed character's code
// point, or 0x80000000 | byte for a byte that is not part of one.
char32_t CharacterBefore(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && end - start < 4 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
  for (; start < end; ++start) {
    const size_t len = Utf8CharLength(text, start);
    if (len == end - start) return Utf8Decode(text, start, len);
  }
  return 0x80000000u | static_cast<uint8_t>(text[end - 1]);
}

void BuildCharacterTables(TokenizerModel& m) {
  m.bmp_ids.assign(0x10000, -1);
  std::vector<char32_t> bridges;
  for (int32_t id = 0; id < m.size(); ++id) {
    const std::string_view text = m.Text(id);
    // Single characters: the lowest id wins, like Find; unusable ones are dropped below.
    if (text.size() <= 3 && !text.empty() && Utf8CharLength(text, 0) == text.size()) {
      const char32_t cp = Utf8Decode(text, 0, text.size());
      if (m.bmp_ids[cp] < 0) m.bmp_ids[cp] = id;
    }
    if (!m.BpeUsable(id)) continue;
    for (size_t p = text.find(kSpaceMarker, 1); p != std::string_view::npos; p = text.find(kSpaceMarker, p + 1)) {
      const char32_t before = CharacterBefore(text, p);
      if (before != kSpaceMarkerCp) bridges.push_back(before);
    }
  }
  for (int32_t& id : m.bmp_ids) {
    if (id >= 0 && !m.BpeUsable(id)) id = -1;
  }
  std::sort(bridges.begin(), bridges.end());
  bridges.erase(std::unique(bridges.begin(), bridges.end()), bridges.end());
  m.bridge_chars = std::move(bridges);
}

}  // namespace

int32_t TokenizerModel::Find(std::string_view text) const { return FindHashed(text, HashText(text)); }

int32_t TokenizerModel::FindHashed(std::string_view text, uint64_t hash) const {
  if (text_slots.empty()) return -1;
  const size_t mask = text_slots.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const uint64_t slot = text_slots[i];
    if (slot == kEmptySlot) return -1;
    if ((slot >> 32) != (hash >> 32)) continue;
    const auto id = static_cast<int32_t>(slot & 0xFFFFFFFFu);
    if (Text(id) == text) return id;
  }
}

void TokenizerModel::FindMany(const std::string_view* queries, size_t count, int32_t* ids) const {
  constexpr size_t kBatch = 64;
  if (text_slots.empty()) {
    std::fill(ids, ids + count, -1);
    return;
  }
  const size_t mask = text_slots.size() - 1;
  uint64_t hash[kBatch];
  for (size_t base = 0; base < count; base += kBatch) {
    const size_t n = std::min(kBatch, count - base);
    const std::string_view* q = queries + base;
    int32_t* out = ids + base;
    // Stage by stage, each issuing every access of the batch before waiting on any: the slot, then
    // the candidate's offset, then its text.
    for (size_t i = 0; i < n; ++i) {
      hash[i] = HashText(q[i]);
      __builtin_prefetch(&text_slots[hash[i] & mask]);
    }
    for (size_t i = 0; i < n; ++i) {
      out[i] = -1;
      for (size_t j = hash[i] & mask;; j = (j + 1) & mask) {
        const uint64_t slot = text_slots[j];
        if (slot == kEmptySlot) break;
        if ((slot >> 32) == (hash[i] >> 32)) {
          out[i] = static_cast<int32_t>(slot & 0xFFFFFFFFu);
          __builtin_prefetch(&text_offsets[out[i]]);
          break;
        }
      }
    }
    for (size_t i = 0; i < n; ++i) {
      if (out[i] >= 0) __builtin_prefetch(texts.data() + text_offsets[out[i]]);
    }
    for (size_t i = 0; i < n; ++i) {
      // A tag match that is not the string (a 32-bit tag collision) takes the ordinary path.
      if (out[i] >= 0 && Text(out[i]) != q[i]) out[i] = Find(q[i]);
    }
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
  static std::atomic<uint64_t> next_instance_id{1};
  m.instance_id = next_instance_id.fetch_add(1);
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

  BuildCharacterTables(m);

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
