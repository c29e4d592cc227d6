#include "model/forward_buffers.h"

#include <algorithm>

#include "kernels/matmul.h"

namespace fgemma {

ForwardBuffers ForwardBuffers::Create(const Model& model, size_t max_batch, size_t context, int threads, size_t lora_rank) {
  const ModelConfig& c = model.config();
  const size_t B = max_batch, H = static_cast<size_t>(c.hidden), Q = static_cast<size_t>(c.q_dim()),
               KV = static_cast<size_t>(c.kv_dim()), I = static_cast<size_t>(c.intermediate),
               W = static_cast<size_t>(c.sliding_window);
  ForwardBuffers b;
  b.x = FloatBuffer(B * H);
  b.xn = FloatBuffer(B * H);
  b.q = FloatBuffer(B * Q);
  b.k = FloatBuffer(B * KV);
  b.v = FloatBuffer(B * KV);
  b.attn = FloatBuffer(B * Q);
  b.proj = FloatBuffer(B * H);
  b.gate = FloatBuffer(B * I);
  b.up = FloatBuffer(B * I);
  if (lora_rank > 0) b.lora_u = FloatBuffer(B * lora_rank);
  // A query sees at most `context` keys on a global layer (window + batch on a sliding one).
  b.scores_stride = std::max(context, W + B);
  const size_t group = static_cast<size_t>(c.num_heads / c.num_kv_heads);
  // Rows of one sequence attend together, up to kMaxAttentionRows, as many as fit 1 MiB of scores
  // per thread (fewer at long contexts; at least one).
  constexpr size_t kScoresBudget = size_t{1} << 18;
  b.attention_rows = std::clamp<size_t>(kScoresBudget / (group * b.scores_stride), 1, std::min(kMaxAttentionRows, B));
  b.scores = FloatBuffer(static_cast<size_t>(std::max(1, threads)) * b.attention_rows * group * b.scores_stride);

  size_t packed = 0;
  for (int l = 0; l < c.num_layers; ++l) {
    const LayerWeights& L = model.layer(l);
    for (const KernelMatrix* w : L.Projections())
      packed = std::max(packed, PackedActivationBytes(w->dtype, w->cols, B));
  }
  b.packed.resize(packed);
  return b;
}

}  // namespace fgemma
