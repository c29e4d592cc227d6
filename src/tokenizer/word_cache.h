// A per-thread cache of word -> ids, so the BPE of words seen before ("▁the", "▁function", the keys
// of a tool catalog) is not recomputed. Bounded: entries live in a fixed-size arena indexed by a
// fixed-size hash table; when either fills up the whole cache is dropped and refilled (frequent words
// come straight back). Allocated on a thread's first Encode. Entries belong to one tokenizer model
// (by a process-unique id), so a thread alternating between tokenizers loses hits, never correctness.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace fgemma::tokenizer_internal {

class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 255;

  // The calling thread's cache, emptied if it last served another model.
  static WordCache& ForThread(uint64_t model_id);
  // Empties the calling thread's cache (benchmarks measure encoding without warm entries).
  static void ClearForThread();

  // Appends the cached ids of `word` to `out` and returns true on a hit.
  bool Lookup(std::string_view word, uint64_t hash, std::vector<int32_t>& out) const;
  void Insert(std::string_view word, uint64_t hash, const int32_t* ids, size_t count);

  static uint64_t Hash(std::string_view word);

 private:
  static constexpr size_t kIndexSlots = 16384;        // at most half used
  static constexpr size_t kArenaBytes = 512 * 1024;   // words and ids

  // Entry layout in the arena: hash (8), word length (1), id count (1), word bytes, padding to 4, ids.
  struct Header {
    uint64_t hash;
    uint8_t word_length;
    uint8_t id_count;
  };
  static size_t EntryBytes(size_t word_length, size_t id_count);
  void Clear();

  uint64_t model_id_ = 0;
  size_t entries_ = 0;
  std::vector<uint32_t> index_ = std::vector<uint32_t>(kIndexSlots, 0);  // arena offset + 1, 0: empty
  std::vector<uint8_t> arena_;
};

}  // namespace fgemma::tokenizer_internal
