// The immutable tables behind a Tokenizer, filled by one of the loaders (tokenizer.json or GGUF-style
// arrays) and then finished by FinishModel, which derives every lookup structure and checks the
// invariants the encoder and decoders rely on.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/pair_map.h"
#include "util/status.h"

namespace fgemma::tokenizer_internal {

enum TokenFlag : uint8_t {
  kFlagSpecial = 1,   // skipped by DecodeOptions::skip_special
  kFlagAdded = 2,     // matched atomically in raw text
  kFlagPlain = 4,     // added token of whitespace only: matched even without parse_special
  kFlagByte = 8,      // "<0xNN>": decodes to one raw byte
  kFlagUnused = 16,   // GGUF "unused": never produced by encoding
};

struct TokenizerModel {
  // Token strings in id order, concatenated; token i is texts[text_offsets[i], text_offsets[i+1]).
  std::string texts;
  std::vector<uint32_t> text_offsets{0};
  std::vector<uint8_t> flags;

  // Filled by the loader.
  PairMap merges;
  bool prepend_space = false;  // Hugging Face Prepend("▁") normalizer / GGUF add_space_prefix
  bool ignore_merges = false;  // a whole stretch that is itself a token is emitted as it is
  int32_t bos_id = -1;
  int32_t unk_id = -1;
  std::vector<int32_t> eos_ids;

  // Bytes Tokenizer::FromVocab read (hashed or compared) to derive the merges from the token
  // list: linear in the vocabulary's bytes; the tests bound it (a long token must not cost its
  // length squared).
  uint64_t merge_build_bytes = 0;

  // Derived by FinishModel.
  uint64_t instance_id = 0;  // process-unique; keys the per-thread word cache
  // Open-addressing table keyed by token text: (upper 32 bits of the text's hash) << 32 | id, or
  // kEmptySlot. The hash tag rejects almost every non-matching slot without touching `texts`.
  static constexpr uint64_t kEmptySlot = ~uint64_t{0};
  std::vector<uint64_t> text_slots;
  std::string pieces;               // what each token decodes to ("▁" -> " ", byte tokens -> the byte)
  std::vector<uint32_t> piece_offsets;
  std::array<int32_t, 256> byte_ids{};
  // Id of each Basic Multilingual Plane character usable by BPE, or -1: most characters of most text
  // are found here without hashing.
  std::vector<int32_t> bmp_ids;
  // Characters c for which some token contains c followed by "▁" (c itself not "▁"): BPE may join a
  // word to the next only after one of these, so the encoder cuts stretches into words before every
  // other "▁" that ends a run of non-"▁" characters. Sorted. (FunctionGemma: only '>', from ">▁</".)
  std::vector<char32_t> bridge_chars;
  AddedTokenMatcher added;

  int32_t size() const { return static_cast<int32_t>(flags.size()); }
  std::string_view Text(int32_t id) const {
    return std::string_view(texts).substr(text_offsets[id], text_offsets[id + 1] - text_offsets[id]);
  }
  std::string_view Piece(int32_t id) const {
    return std::string_view(pieces).substr(piece_offsets[id], piece_offsets[id + 1] - piece_offsets[id]);
  }
  // Id of the token spelled exactly `text`, or -1.
  int32_t Find(std::string_view text) const;
  // The same with HashText(text) already known.
  int32_t FindHashed(std::string_view text, uint64_t hash) const;
  // Find for many strings, overlapping their cache misses: loading resolves 1.5 million merge
  // strings, and one-at-a-time lookups spend most of their time waiting on memory.
  void FindMany(const std::string_view* queries, size_t count, int32_t* ids) const;
  // Whether BPE may emit `id`: a normal token or a whitespace-only added token, never a control,
  // function-calling, byte or unused token (so untrusted text cannot produce those).
  bool BpeUsable(int32_t id) const {
    const uint8_t f = flags[id];
    return (f & (kFlagSpecial | kFlagByte | kFlagUnused)) == 0 && ((f & kFlagAdded) == 0 || (f & kFlagPlain) != 0);
  }

  // Appends a token string in id order (the id is the number of tokens appended before).
  void AppendToken(std::string_view text, uint8_t token_flags) {
    texts.append(text);
    text_offsets.push_back(static_cast<uint32_t>(texts.size()));
    flags.push_back(token_flags);
  }
};

// Whether an added token's text is whitespace only (" ", "\t", "\n", "\r", "▁"): such tokens chunk
// ordinary text and stay atomic even when special parsing is off.
bool IsWhitespaceToken(std::string_view text);

// Parses "<0xNN>" (two upper- or lower-case hex digits) into the byte value, or -1.
int ParseByteToken(std::string_view text);

// Builds the derived tables. `what` names the source in errors ("tokenizer.json", "GGUF vocabulary").
// Fails on duplicate token strings, a missing byte-fallback token, or ids out of range.
Status FinishModel(TokenizerModel& model, const std::string& what);

}  // namespace fgemma::tokenizer_internal
