// A fixed pool of FunctionCallers over one shared Model, handed out one request at a time.
//
// Each caller keeps the catalog prefix of the last tool list it served, so Acquire prefers a free
// caller whose last catalog matches the request's (its prefix is then restored from memory) and
// otherwise takes the least recently used free one. Waiting is bounded: past the timeout the
// request is refused (the server answers 503) instead of queueing without limit. The callers come
// from one Engine and config: they share its thread pool, adapter and (share_passes) pass group.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/engine.h"
#include "runtime/function_caller.h"

namespace fgemma::server {

class CallerPool {
 public:
  struct Lease;
  // `count` callers made by engine.NewCaller(config); only the first keeps config.cache_path.
  static Result<std::unique_ptr<CallerPool>> Create(Engine& engine, const EngineConfig& config, size_t count);

  // Returns nullptr when no caller became free within `timeout`.
  std::unique_ptr<Lease> Acquire(uint64_t catalog_key, std::chrono::milliseconds timeout);
  size_t size() const { return slots_.size(); }
  size_t busy() const;

  struct Lease {
    ~Lease();
    FunctionCaller& caller() { return *pool->slots_[index].caller; }
    bool catalog_reused = false;  // the caller last served the same tool list
    CallerPool* pool;
    size_t index;
  };

 private:
  struct Slot {
    std::unique_ptr<FunctionCaller> caller;
    uint64_t catalog_key = 0;
    uint64_t last_used = 0;
    bool busy = false;
  };
  void Release(size_t index);

  mutable std::mutex mu_;
  std::condition_variable freed_;
  std::vector<Slot> slots_;
  uint64_t clock_ = 0;
};

}  // namespace fgemma::server
