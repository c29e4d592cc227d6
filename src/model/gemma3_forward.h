// The Gemma 3 forward pass over a chunk of tokens, with its KV cache and scratch buffers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <initializer_list>
#include <vector>

#include "model/model.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace fgemma {

// Float32 buffer that is allocated once and never resized (no allocation while decoding).
// Large buffers come from the OS lazily, so an unused context costs address space, not RAM.
class FloatBuffer {
 public:
  FloatBuffer() = default;
  explicit FloatBuffer(size_t n) : data_(std::make_unique_for_overwrite<float[]>(n)), size_(n) {}
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  std::unique_ptr<float[]> data_;
  size_t size_ = 0;
};

// Per-layer key/value storage.
//   sliding layers: a ring of `window` rows; position p lives in row p % window
//   global layers:  `context` rows; position p lives in row p
struct LayerKvCache {
  LayerKind kind = LayerKind::kSliding;
  size_t rows = 0;     // window or context
  FloatBuffer keys;    // [rows, kv_heads * head_dim]
  FloatBuffer values;  // [rows, kv_heads * head_dim]
};

struct ForwardOptions {
  size_t max_batch = 256;   // tokens per forward chunk
  size_t context = 0;       // positions the cache holds (0 = max_position_embeddings)
};

// Called after each decoder layer with x[num_tokens, hidden] (tests compare against reference
// activations); null in production.
using LayerObserver = std::function<void(int layer, const float* x, size_t num_tokens)>;

class Gemma3Forward {
 public:
  static Result<std::unique_ptr<Gemma3Forward>> Create(const Model& model, const ForwardOptions& options, int num_threads);

  // Runs tokens[n] (n <= max_batch) at positions [start, start + n) through every layer, updating
  // the KV cache. Afterwards hidden(i) holds token i's final-normed hidden state.
  // The caller guarantees start + n <= context and that positions before `start` are cached.
  void Run(std::span<const int32_t> tokens, size_t start, ThreadPool& pool, const LayerObserver* observer);

  const float* final_hidden(size_t i) const { return xn_.data() + i * static_cast<size_t>(cfg_.hidden); }
  size_t max_batch() const { return max_batch_; }
  size_t context() const { return context_; }
  // Bytes of KV cache by layer kind (for reports).
  uint64_t kv_bytes(LayerKind kind) const;
  // Copies the cache state for positions [0, n) from `other` (catalog-prefix restore). Only rows
  // that hold positions < n are copied: n rows of a global layer, min(n, window) of a ring.
  void CopyCacheFrom(const Gemma3Forward& other, size_t n);
  // The same rows as bytes (for cache files): ExportState appends them, ImportState reads exactly
  // StateBytes(n) bytes back.
  uint64_t StateBytes(size_t n) const;
  void ExportState(size_t n, std::string* out) const;
  Status ImportState(size_t n, const uint8_t* data, size_t size);
  // Sets the rows of positions [0, n) to zero keys and values without computing them (benchmarks
  // of decode at a long context: the attention work per step is the same as after a real prefill;
  // the outputs are not meaningful).
  Status ZeroState(size_t n);

 private:
  Gemma3Forward(const Model& model) : model_(model), cfg_(model.config()) {}
  // y = x W^T for one or more weights that read the same input (q/k/v; gate/up): the input is
  // packed once and the rows of all of them are split across the pool in one dispatch.
  struct Projection {
    const KernelMatrix* w;
    float* y;
    size_t y_stride;
  };
  void MatMulParallel(std::initializer_list<Projection> projections, const float* x, size_t n, size_t x_stride,
                      ThreadPool& pool);
  void Attention(int layer, size_t n, size_t start, ThreadPool& pool);

  const Model& model_;
  const ModelConfig& cfg_;
  size_t max_batch_ = 0;
  size_t context_ = 0;
  std::vector<LayerKvCache> cache_;
  // Scratch, B = max_batch, H = hidden, Q = heads*head_dim, KV = kv_heads*head_dim, I = intermediate.
  FloatBuffer x_;        // [B, H]  residual stream
  FloatBuffer xn_;       // [B, H]  normed input of a block; after Run, the final-normed output
  FloatBuffer q_;        // [B, Q]
  FloatBuffer k_;        // [B, KV]
  FloatBuffer v_;        // [B, KV]
  FloatBuffer attn_;     // [B, Q]  attention output per head, concatenated
  FloatBuffer proj_;     // [B, H]  o_proj / down_proj output
  FloatBuffer gate_;     // [B, I]
  FloatBuffer up_;       // [B, I]
  FloatBuffer rope_cos_[2], rope_sin_[2];  // [B, head_dim/2] per layer kind (0 sliding, 1 global)
  FloatBuffer inv_freq_[2];                // [head_dim/2]
  FloatBuffer scores_;   // [threads, max keys]  attention probabilities per worker
  size_t scores_stride_ = 0;
  std::vector<uint8_t> packed_;  // activation packing for integer kernels
};

}  // namespace fgemma
