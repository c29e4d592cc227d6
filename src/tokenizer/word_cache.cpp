#include "tokenizer/word_cache.h"

#include "tokenizer/text_hash.h"

#include <algorithm>
#include <cstring>
#include <memory>

namespace fgemma::tokenizer_internal {
namespace {

// Allocated lazily so threads that never encode carry no cache.
thread_local std::unique_ptr<WordCache> t_cache;

}  // namespace

WordCache& WordCache::ForThread(uint64_t model_id) {
  if (!t_cache) t_cache = std::make_unique<WordCache>();
  if (t_cache->model_id_ != model_id) {
    t_cache->Clear();
    t_cache->model_id_ = model_id;
  }
  return *t_cache;
}

void WordCache::ClearForThread() {
  if (t_cache) t_cache->Clear();
}

void WordCache::Clear() {
  std::fill(index_.begin(), index_.end(), 0);
  arena_.clear();
  entries_ = 0;
}

uint64_t WordCache::Hash(std::string_view word) { return HashText(word); }

size_t WordCache::EntryBytes(size_t word_length, size_t id_count) {
  const size_t ids_at = (sizeof(Header) + word_length + 3) & ~size_t{3};
  return (ids_at + id_count * sizeof(int32_t) + 7) & ~size_t{7};
}

bool WordCache::Lookup(std::string_view word, uint64_t hash, std::vector<int32_t>& out) const {
  for (size_t i = hash & (kIndexSlots - 1);; i = (i + 1) & (kIndexSlots - 1)) {
    const uint32_t slot = index_[i];
    if (slot == 0) return false;
    const uint8_t* entry = arena_.data() + (slot - 1);
    Header h;
    std::memcpy(&h, entry, sizeof(h));
    if (h.hash != hash || h.word_length != word.size() || std::memcmp(entry + sizeof(Header), word.data(), word.size()) != 0)
      continue;
    const size_t ids_at = (sizeof(Header) + h.word_length + 3) & ~size_t{3};
    const size_t first = out.size();
    out.resize(first + h.id_count);
    std::memcpy(out.data() + first, entry + ids_at, h.id_count * sizeof(int32_t));
    return true;
  }
}

void WordCache::Insert(std::string_view word, uint64_t hash, const int32_t* ids, size_t count) {
  if (word.size() > kMaxWordBytes || count == 0 || count > 255) return;
  const size_t bytes = EntryBytes(word.size(), count);
  if (arena_.capacity() < kArenaBytes) arena_.reserve(kArenaBytes);
  if (arena_.size() + bytes > kArenaBytes || (entries_ + 1) * 2 > kIndexSlots) Clear();
  const size_t offset = arena_.size();
  arena_.resize(offset + bytes);
  uint8_t* entry = arena_.data() + offset;
  const Header h{hash, static_cast<uint8_t>(word.size()), static_cast<uint8_t>(count)};
  std::memcpy(entry, &h, sizeof(h));
  std::memcpy(entry + sizeof(Header), word.data(), word.size());
  std::memcpy(entry + ((sizeof(Header) + word.size() + 3) & ~size_t{3}), ids, count * sizeof(int32_t));
  size_t i = hash & (kIndexSlots - 1);
  while (index_[i] != 0) i = (i + 1) & (kIndexSlots - 1);
  index_[i] = static_cast<uint32_t>(offset + 1);
  ++entries_;
}

}  // namespace fgemma::tokenizer_internal
