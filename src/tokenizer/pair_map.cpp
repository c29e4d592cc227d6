#include "tokenizer/pair_map.h"

#include <sys/mman.h>

#include <bit>
#include <cstdlib>
#include <new>

namespace fgemma::tokenizer_internal {
namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}

void PairMap::Reserve(size_t expected) { Allocate(std::bit_ceil(expected * 2 + 16)); }

void PairMap::Free::operator()(Entry* p) const { std::free(p); }

void PairMap::Allocate(size_t capacity) {
  // Every lookup lands on a random slot; with 4 KiB pages a 16 MiB table also misses the TLB on
  // most of them, so the table asks for huge pages (Linux grants them with THP set to madvise).
  const size_t bytes = capacity * sizeof(Entry);
  const size_t align = bytes >= kHugePage ? kHugePage : alignof(Entry);
  void* p = std::aligned_alloc(align, (bytes + align - 1) / align * align);
  if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (bytes >= kHugePage) madvise(p, bytes, MADV_HUGEPAGE);
#endif
  slots_.reset(static_cast<Entry*>(p));
  for (size_t i = 0; i < capacity; ++i) slots_[i] = Entry{kEmpty, Merge{0, 0}};
  capacity_ = capacity;
  mask_ = capacity - 1;
  shift_ = 64 - std::countr_zero(capacity);
  size_ = 0;
}

void PairMap::Grow() {
  const size_t old_capacity = capacity_;
  std::unique_ptr<Entry[], Free> old = std::move(slots_);
  Allocate(old_capacity == 0 ? 16 : old_capacity * 2);
  for (size_t i = 0; i < old_capacity; ++i) {
    const Entry& e = old[i];
    if (e.key != kEmpty) Set(static_cast<int32_t>(e.key >> 32), static_cast<int32_t>(e.key & 0xFFFFFFFFu), e.merge);
  }
}

void PairMap::Set(int32_t left, int32_t right, Merge merge) {
  if (capacity_ == 0 || (size_ + 1) * 2 > capacity_) Grow();
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
