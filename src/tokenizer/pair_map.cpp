#include "tokenizer/pair_map.h"

#include <bit>

namespace fgemma::tokenizer_internal {

void PairMap::Reserve(size_t expected) { Allocate(std::bit_ceil(expected * 2 + 16)); }

void PairMap::Allocate(size_t capacity) {
  slots_.assign(capacity, Entry{kEmpty, Merge{0, 0}});
  mask_ = capacity - 1;
  shift_ = 64 - std::countr_zero(capacity);
  size_ = 0;
}

void PairMap::Grow() {
  std::vector<Entry> old = std::move(slots_);
  Allocate(old.empty() ? 16 : old.size() * 2);
  for (const Entry& e : old) {
    if (e.key != kEmpty) Set(static_cast<int32_t>(e.key >> 32), static_cast<int32_t>(e.key & 0xFFFFFFFFu), e.merge);
  }
}

void PairMap::Set(int32_t left, int32_t right, Merge merge) {
  if (slots_.empty() || (size_ + 1) * 2 > slots_.size()) Grow();
  const uint64_t key = Key(left, right);
  for (size_t i = Slot(key);; i = (i + 1) & mask_) {
    Entry& e = slots_[i];
    if (e.key == key) {
      e.merge = merge;
      return;
    }
    if (e.key == kEmpty) {
      e = Entry{key, merge};
      ++size_;
      return;
    }
  }
}

}  // namespace fgemma::tokenizer_internal
