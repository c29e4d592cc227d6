// Open-addressing hash table from a pair of adjacent token ids to the merge that joins them. It is
// probed once or twice per BPE merge, so it stores the pair and its answer inline (no pointers) and
// sizes itself to a load factor of at most 1/2. Move-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace fgemma::tokenizer_internal {

struct Merge {
  uint32_t rank;   // lower merges first
  int32_t result;  // id of the joined token
};

class PairMap {
 public:
  // Prepares for about `expected` pairs; any earlier contents are dropped.
  void Reserve(size_t expected);
  // Sets the merge for (left, right), replacing an earlier one. Ids must be non-negative.
  void Set(int32_t left, int32_t right, Merge merge);
  // The merge for (left, right), or nullptr.
  const Merge* Find(int32_t left, int32_t right) const {
    if (capacity_ == 0) return nullptr;
    const uint64_t key = Key(left, right);
    for (size_t i = Slot(key);; i = (i + 1) & mask_) {
      const Entry& e = slots_[i];
      if (e.key == key) return &e.merge;
      if (e.key == kEmpty) return nullptr;
    }
  }
  // Starts loading the slot of (left, right) into cache, so several lookups can overlap.
  void Prefetch(int32_t left, int32_t right) const {
    if (capacity_ != 0) __builtin_prefetch(&slots_[Slot(Key(left, right))]);
  }
  size_t size() const { return size_; }

 private:
  struct Entry {
    uint64_t key;
    Merge merge;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};  // never a key: ids are below 2^31
  static uint64_t Key(int32_t left, int32_t right) {
    return (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
  }
  size_t Slot(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_); }
  void Allocate(size_t capacity);  // a power of two
  void Grow();

  struct Free {
    void operator()(Entry* p) const;
  };
  // Random probes over megabytes: the table asks for huge pages (see pair_map.cpp).
  std::unique_ptr<Entry[], Free> slots_;
  size_t capacity_ = 0;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace fgemma::tokenizer_internal
