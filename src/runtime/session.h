// A decoding session: one sequence's KV cache and scratch over a shared, immutable Model.
//
// Everything a session needs is allocated in Create(); Evaluate() and Generate() allocate nothing
// (the KV cache for the whole context is reserved up front and filled lazily by the OS).
// A session is used by one thread at a time; many sessions may share one Model and one thread
// pool, and run concurrently on different threads (they take turns on the pool per parallel loop).
#pragma once

#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <span>

#include "model/gemma3_forward.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "runtime/lm_head.h"
#include "runtime/pass_batcher.h"
#include "util/thread_pool.h"

namespace fgemma {

struct SessionOptions {
  size_t context = 0;      // positions to hold (0 = the model's max_position_embeddings)
  size_t max_batch = 256;  // tokens per forward chunk during prefill
  int threads = 0;         // 0 = the pool's count if one is given, else ThreadPool::DefaultThreads()
  // The pool that runs the forward pass and head (its thread count must equal `threads` when both
  // are set). Null: SharedThreadPool(threads), the one every session of the process with that
  // count shares. Results depend on the thread count only, not on the pool or its other users.
  std::shared_ptr<ThreadPool> pool;
  // Shares forward passes with the other sessions attached to it (batched serving, see
  // pass_batcher.h); its pool is the session's. Null: this session runs its own passes.
  std::shared_ptr<PassBatcher> batcher;
  // A LoRA adapter applied at run time over the shared base (null = none); see model/lora_adapter.h.
  std::shared_ptr<const LoraAdapter> lora;
};

class Session {
 public:
  static Result<std::unique_ptr<Session>> Create(std::shared_ptr<const Model> model, const SessionOptions& options);

  // Appends tokens at the current position (prefill in chunks of max_batch), then fills each head
  // request (request.index counts from the first of `tokens`). Errors leave the position unchanged
  // and name the offending token or limit.
  Status Evaluate(std::span<const int32_t> tokens, std::span<HeadRequest> heads = {});
  // Speculative form: the last `undoable` tokens may be taken back by Rewind() afterwards
  // (drafted tokens a verification rejects). Needs tokens.size() <= max_speculative_batch().
  // The positions computed are the same bits as Evaluate's: only the ring rows they replace are
  // copied first (KvCache::SaveRing).
  Status EvaluateSpeculative(std::span<const int32_t> tokens, std::span<HeadRequest> heads, size_t undoable);
  // Takes back the last `count` positions of the last EvaluateSpeculative (at most its undoable).
  Status Rewind(size_t count);
  // The longest batch EvaluateSpeculative takes: one forward chunk that does not wrap a sliding
  // ring by itself.
  size_t max_speculative_batch() const {
    return std::min({max_batch_, cache_.min_ring_rows(), KvCache::kMaxUndoRows});
  }

  // Greedy continuation: evaluates `prompt`, then decodes up to max_new tokens, calling on_token
  // for each (return false to stop). Stops at an EOS id when stop_at_eos.
  Status Generate(std::span<const int32_t> prompt, size_t max_new, bool stop_at_eos,
                  const std::function<bool(int32_t)>& on_token);

  size_t position() const { return position_; }
  size_t context() const { return forward_->context(); }
  void Reset() { position_ = undoable_ = 0; }
  // Makes this session's state equal to `other`'s (same model): copies its KV cache rows.
  Status CopyStateFrom(const Session& other);
  // Takes this session back to `position`, when its state was copied from `base` (CopyStateFrom, at
  // base's position <= `position`) and then extended: the positions before `position` keep their
  // rows (a later prompt sharing them needs not evaluate them again) and the sliding rings get back
  // from `base` the rows later positions overwrote (KvCache::RollBack). Fails when a sliding
  // ring wrapped since the copy (OutOfRange): copy the whole state instead.
  Status RollBackTo(size_t position, const Session& base);
  // Serializes the state (position and KV rows) for a cache file, and restores it.
  void ExportState(std::string* out) const { cache_.Export(position_, out); }
  Status ImportState(size_t position, const uint8_t* data, size_t size);
  // Benchmark aid: moves to `position` with zero keys/values in every earlier row, computing
  // nothing (KvCache::Zero). Decode cost and memory after it equal a real prefill's;
  // the logits are meaningless.
  Status JumpWithZeroState(size_t position);

  const Model& model() const { return *model_; }
  // The adapter this session runs with, or null.
  const LoraAdapter* lora() const { return forward_->lora(); }
  uint64_t lora_fingerprint() const { return lora() ? lora()->fingerprint() : 0; }
  ThreadPool& pool() const { return *pool_; }
  // Threads of the forward pass; the row blocks of its matrix products, hence the last bits of
  // every result, depend on it (see catalog_cache.h).
  int threads() const { return pool_->num_threads(); }
  const KvCache& kv_cache() const { return cache_; }
  // Layer observers see passes this session runs itself (not a batcher's).
  void set_layer_observer(LayerObserver observer) { observer_ = std::move(observer); }

 private:
  Session() = default;
  std::shared_ptr<const Model> model_;
  std::shared_ptr<ThreadPool> pool_;
  std::unique_ptr<Gemma3Forward> forward_;
  KvCache cache_;  // made for forward_->context()
  std::unique_ptr<LmHead> head_;
  std::shared_ptr<PassBatcher> batcher_;
  size_t max_batch_ = 1;  // tokens per pass: the forward chunk, or the batcher's pass
  LayerObserver observer_;
  size_t position_ = 0;
  size_t undoable_ = 0;
  std::array<const float*, LmHead::kMaxMany> many_hidden_{};
  std::array<HeadRequest*, LmHead::kMaxMany> many_heads_{};  // positions the last EvaluateSpeculative allows Rewind to take back
};

}  // namespace fgemma
