// Continuous batching: sessions that evaluate at the same time share forward passes, so one read
// of the weights serves every active request's next token(s).
//
// A session attached to a PassBatcher hands each Evaluate to it and waits. Whichever waiting
// session finds no pass running leads the next one: it takes, first come first served, the
// pending work of every waiting session (up to max_batch rows: a long prefill joins in chunks, so
// it holds the others back by one chunk at most), runs one forward pass over all of it
// (Gemma3Forward's segments: each with its own KV cache), computes every head asked for at those
// rows (full-vocabulary heads of several sessions in one read of the embedding), and wakes the
// sessions whose work is done. Sessions join and leave between passes.
//
// Exactness: every row and every head gets the bits it gets when its session runs alone (the
// forward pass and the head's matrix products give a row the same bits whatever the batch), so
// batched answers equal answers served one at a time, token for token.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "model/gemma3_forward.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "runtime/lm_head.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace fgemma {

class PassBatcher {
 public:
  // Passes of up to `max_batch` rows over contexts of up to `context` positions, on `pool` (every
  // attached session must use the same pool).
  // `lora`: the adapter every attached session runs with (null: none; a session must match it).
  static Result<std::shared_ptr<PassBatcher>> Create(std::shared_ptr<const Model> model, size_t max_batch,
                                                     size_t context, std::shared_ptr<ThreadPool> pool,
                                                     std::shared_ptr<const LoraAdapter> lora = nullptr);

  // Runs tokens at positions [start, start + tokens.size()) of `cache` within shared passes and
  // fills `heads` (request.index counts from the first of `tokens`; candidate requests are computed
  // with `head`, the session's own). The caller has checked tokens, heads and the context.
  void Evaluate(std::span<const int32_t> tokens, size_t start, KvCache& cache, LmHead& head,
                std::span<HeadRequest> heads);

  // Marks the caller as active (a request in progress) until the returned object is destroyed:
  // a pass's leader waits briefly (at most gather_wait) for every active session to queue its
  // work, so that sessions decoding in step share every pass instead of alternating.
  class Participation {
   public:
    explicit Participation(PassBatcher* b);
    ~Participation();
    Participation(const Participation&) = delete;
    Participation& operator=(const Participation&) = delete;

   private:
    PassBatcher* batcher_;
  };
  Participation Join() { return Participation(this); }
  static constexpr std::chrono::microseconds kGatherWait{2000};
  // Replaces kGatherWait. Tests that must see passes shared set a long wait: on a loaded machine
  // a session can take longer than 2 ms to queue its next step (answers are the same either way).
  void set_gather_wait(std::chrono::microseconds wait) {
    std::lock_guard lock(mu_);
    gather_wait_ = wait;
  }

  const Model& model() const { return *model_; }
  const std::shared_ptr<ThreadPool>& pool() const { return pool_; }
  size_t context() const { return forward_->context(); }
  size_t max_batch() const { return forward_->max_batch(); }
  const LoraAdapter* lora() const { return forward_->lora(); }

  struct Stats {
    uint64_t passes = 0;       // forward passes run
    uint64_t rows = 0;         // token rows over all passes
    uint64_t shared = 0;       // passes that served more than one session
    uint64_t max_sessions = 0; // most sessions in one pass
  };
  Stats stats() const;

 private:
  struct Pending;
  struct Member;  // a pending evaluation's share of the current pass
  PassBatcher() = default;
  void ComputeHeads();

  std::shared_ptr<const Model> model_;
  std::shared_ptr<ThreadPool> pool_;
  std::unique_ptr<Gemma3Forward> forward_;
  std::unique_ptr<LmHead> head_;  // the pass's full-vocabulary heads, in one read of the embedding

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool running_ = false;
  size_t active_ = 0;            // sessions between Join and the end of their Participation
  std::chrono::microseconds gather_wait_ = kGatherWait;
  std::vector<Pending*> queue_;  // waiting evaluations, first come first served
  Stats stats_;
  // The current pass (used by its leader only; reserved at Create: a pass allocates nothing).
  std::vector<ForwardSegment> segments_;
  std::vector<Member> members_;
  std::vector<const float*> full_hidden_;
  std::vector<HeadRequest*> full_requests_;
};

}  // namespace fgemma
