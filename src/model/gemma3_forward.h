// The Gemma 3 forward pass over a chunk of tokens: the per-layer steps, over a sequence's KvCache,
// with activations in ForwardBuffers and work spread as thread_split.h decides.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "model/forward_buffers.h"
#include "model/kv_cache.h"
#include "model/lora_adapter.h"
#include "model/lora_apply.h"
#include "model/model.h"
#include "model/rope_tables.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace fgemma {

struct ForwardOptions {
  size_t max_batch = 256;   // tokens per forward chunk
  size_t context = 0;       // positions the cache holds (0 = max_position_embeddings)
  // A LoRA adapter added to the projections at run time (null = the base alone); the forward pass
  // keeps it alive. Its shapes were checked against the model's config when it was loaded.
  std::shared_ptr<const LoraAdapter> lora;
};

// Called after each decoder layer with x[num_tokens, hidden] (tests compare against reference
// activations); null in production.
using LayerObserver = std::function<void(int layer, const float* x, size_t num_tokens)>;

// One sequence's share of a forward pass: its tokens at positions [start, start + tokens.size())
// of its own KV cache, which holds the positions before `start`.
struct ForwardSegment {
  std::span<const int32_t> tokens;
  size_t start = 0;
  KvCache* cache = nullptr;
};

class Gemma3Forward {
 public:
  // `num_threads` is the thread count of the pool every Run will use (per-thread scratch).
  static Result<std::unique_ptr<Gemma3Forward>> Create(const Model& model, const ForwardOptions& options, int num_threads);

  // Runs tokens[n] (n <= max_batch) at positions [start, start + n) through every layer, storing
  // their keys and values in `cache` (made for context()). Afterwards final_hidden(i) holds token
  // i's final-normed hidden state. The caller guarantees start + n <= context and that `cache`
  // holds the positions before `start`.
  void Run(std::span<const int32_t> tokens, size_t start, KvCache& cache, ThreadPool& pool,
           const LayerObserver* observer);
  // One pass over several sequences (batched serving): the weights are read once for all their
  // tokens, each token attends only to its own segment's cache, and final_hidden rows follow the
  // segments in order. The tokens of all segments together are at most max_batch, each segment
  // within its cache's context. Every row gets the bits it gets when its segment runs alone: the
  // matrix kernels give a row the same bits whatever the batch, the other steps are per row.
  void Run(std::span<const ForwardSegment> segments, ThreadPool& pool);

  const float* final_hidden(size_t i) const { return buf_.xn.data() + i * static_cast<size_t>(cfg_.hidden); }
  size_t max_batch() const { return max_batch_; }
  size_t context() const { return context_; }
  const LoraAdapter* lora() const { return lora_.get(); }

 private:
  Gemma3Forward(const Model& model) : model_(model), cfg_(model.config()) {}
  // The steps of Run over segments_ (n tokens in all), x[n, H] the residual stream.
  void RunSegments(std::span<const ForwardSegment> segments, ThreadPool& pool, const LayerObserver* observer);
  void Embed();
  void AttentionBlock(int layer, size_t n, ThreadPool& pool);
  void Attention(int layer, size_t n, ThreadPool& pool);
  // The rows of one attention job (a row block of one segment, one KV head): row i is at position
  // pos[i] and sees positions [first(i), pos[i]] through vis[i]; together [lo, end).
  struct AttentionRows {
    size_t first_row = 0, count = 0, lo = 0, end = 0;
    size_t pos[kMaxAttentionRows];
    KvCache::Visible vis[kMaxAttentionRows];
    size_t first(size_t i) const { return pos[i] + 1 - vis[i].count; }
  };
  AttentionRows RowsOf(int layer, size_t job) const;
  template <typename Fn>
  void ForEachKeyPart(const AttentionRows& rows, bool values, size_t from, size_t to, Fn&& fn) const;
  void ScoreRows(const AttentionRows& rows, size_t h0, size_t heads, size_t from, size_t to, float* scores) const;
  void SoftmaxRow(const AttentionRows& rows, size_t i, float* scores) const;
  void MixRows(const AttentionRows& rows, size_t h0, size_t heads, size_t col0, size_t cols, const float* p);
  void MlpBlock(int layer, size_t n, ThreadPool& pool);
  void FinalNorm(size_t n);
  // Projection `index` of layer l's adapter, or null without one.
  const LoraProjection* Lora(int l, size_t index) const { return lora_ ? &lora_->projection(l, index) : nullptr; }
  float* LoraBuffers() { return buf_.lora_u.data(); }

  const Model& model_;
  const ModelConfig& cfg_;
  size_t max_batch_ = 0;
  size_t context_ = 0;
  ForwardBuffers buf_;
  RopeTables rope_;
  // The current pass: its segments, and for each of its rows the segment it belongs to and that
  // segment's first row ([max_batch] each, made at Create: a pass allocates nothing).
  std::span<const ForwardSegment> segments_;
  std::vector<uint32_t> row_segment_;
  std::vector<uint32_t> segment_first_row_;
  // Attention's tasks by rows: consecutive rows of one segment ([max_batch], made at Create).
  struct RowBlock {
    uint32_t first, count;
  };
  std::vector<RowBlock> row_blocks_;
  std::shared_ptr<const LoraAdapter> lora_;
};

}  // namespace fgemma
