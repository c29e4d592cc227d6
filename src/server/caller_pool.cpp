#include "server/caller_pool.h"

namespace fgemma::server {

Result<std::unique_ptr<CallerPool>> CallerPool::Create(Engine& engine, const EngineConfig& config, size_t count) {
  if (count == 0) return InvalidArgument("the session pool needs at least one session");
  auto pool = std::make_unique<CallerPool>();
  pool->slots_.resize(count);
  // Every caller computes on one thread pool (the engine's of that thread count): requests served
  // at once take turns per parallel loop instead of running count pools on the same cores.
  EngineConfig others = config;
  others.cache_path.clear();  // one writer per cache file: only the first caller reads and writes it
  for (size_t i = 0; i < count; ++i) {
    FGEMMA_TRY(pool->slots_[i].caller, engine.NewCaller(i == 0 ? config : others));
  }
  return pool;
}

std::unique_ptr<CallerPool::Lease> CallerPool::Acquire(uint64_t catalog_key, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  size_t chosen = slots_.size();
  auto pick = [&] {
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].busy) continue;
      if (slots_[i].catalog_key == catalog_key) {
        chosen = i;
        return true;
      }
      if (chosen == slots_.size() || slots_[i].last_used < slots_[chosen].last_used) chosen = i;
    }
    return chosen != slots_.size();
  };
  if (!freed_.wait_for(lock, timeout, pick)) return nullptr;
  Slot& slot = slots_[chosen];
  slot.busy = true;
  slot.last_used = ++clock_;
  auto lease = std::make_unique<Lease>();
  lease->pool = this;
  lease->index = chosen;
  lease->catalog_reused = slot.catalog_key == catalog_key;
  slot.catalog_key = catalog_key;
  return lease;
}

size_t CallerPool::busy() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& s : slots_) n += s.busy;
  return n;
}

void CallerPool::Release(size_t index) {
  {
    std::lock_guard lock(mu_);
    slots_[index].busy = false;
  }
  freed_.notify_one();
}

CallerPool::Lease::~Lease() { pool->Release(index); }

}  // namespace fgemma::server
