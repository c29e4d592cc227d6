// BPE over one stretch of text lying between added tokens: normalization (" " -> "▁", optional "▁"
// prefix), splitting into characters with byte fallback, and merging lowest rank first.
//
// The stretch is first cut into words before each "▁" that no token can join to the preceding
// character (TokenizerModel::bridge_chars), which cannot change the result: a merge across the cut
// would build a token containing that character followed by "▁". Short words are merged by scanning
// their few pairs; long ones (text without spaces) through a heap of candidate pairs over a linked
// list, O(log n) per merge, so no input is quadratic. Words of up to 255 bytes are remembered in a
// bounded per-thread cache (word_cache.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer_model.h"

namespace fgemma::tokenizer_internal {

// Scratch memory reused across the stretches of one Encode call (never shared between threads).
struct BpeWorkspace {
  struct Symbol {
    int32_t id;    // -1 once merged into its left neighbour
    int32_t prev;  // index of the previous live symbol, or -1
    int32_t next;  // index of the next live symbol, or -1
  };
  struct Candidate {
    uint64_t order;  // rank << 32 | left symbol index: lowest rank first, then leftmost
    int32_t left_id;
    int32_t right_id;
    int32_t result;
  };
  std::string normalized;
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
};

// Appends the ids of `raw` (text with no added token in it) to `out`.
void EncodeStretch(const TokenizerModel& model, std::string_view raw, BpeWorkspace& ws, std::vector<int32_t>& out);

}  // namespace fgemma::tokenizer_internal
