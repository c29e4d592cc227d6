// Gemma 3 forward pass, following the reference (google/gemma_pytorch, float32 compute):
//
//   x = embed[token] * sqrt(hidden)
//   per layer:  h = x + post_attn_norm(attention(input_norm(x)))          AttentionBlock
//               x = h + post_ffn_norm(down(gelu_tanh(gate(n)) * up(n))),  MlpBlock
//                   n = pre_ffn_norm(h)
//   out = final_norm(x)                       (the tied head is applied by the runtime)
//
// With a LoRA adapter, every adapted projection y = W x becomes y = W x + B'(A x) (lora_apply.h),
// added right after the base product; the base weights are never modified.
//
// attention: q, k, v projections; RMSNorm per head on q and k; split-half RoPE (base 1e4 on
// sliding layers, rope_theta / linear scaling on global ones); q *= query_pre_attn_scalar^-0.5;
// causal softmax over keys j <= i (and j > i - window on sliding layers); GQA: query head h reads
// kv head h / (heads / kv_heads).
#include "model/gemma3_forward.h"

#include <algorithm>
#include <cmath>

#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/vec.h"
#include "model/lora_apply.h"
#include "model/thread_split.h"

namespace fgemma {

Result<std::unique_ptr<Gemma3Forward>> Gemma3Forward::Create(const Model& model, const ForwardOptions& options,
                                                             int num_threads) {
  const ModelConfig& c = model.config();
  auto f = std::unique_ptr<Gemma3Forward>(new Gemma3Forward(model));
  f->max_batch_ = std::max<size_t>(1, options.max_batch);
  f->context_ = options.context == 0 ? static_cast<size_t>(c.max_position_embeddings) : options.context;
  if (f->context_ > static_cast<size_t>(c.max_position_embeddings))
    return InvalidArgument("context " + std::to_string(f->context_) + " exceeds the model's max_position_embeddings " +
                           std::to_string(c.max_position_embeddings));
  if (options.lora) FGEMMA_RETURN_IF_ERROR(options.lora->CheckFits(model));
  f->lora_ = options.lora;
  f->buf_ = ForwardBuffers::Create(model, f->max_batch_, f->context_, num_threads,
                                   f->lora_ ? f->lora_->max_layer_rank() : 0);
  f->rope_ = RopeTables(c, f->max_batch_);
  f->row_segment_.resize(f->max_batch_);
  f->segment_first_row_.resize(f->max_batch_);
  return f;
}

void Gemma3Forward::Run(std::span<const int32_t> tokens, size_t start, KvCache& cache, ThreadPool& pool,
                        const LayerObserver* observer) {
  const ForwardSegment one{tokens, start, &cache};
  RunSegments(std::span<const ForwardSegment>(&one, 1), pool, observer);
}

void Gemma3Forward::Run(std::span<const ForwardSegment> segments, ThreadPool& pool) {
  RunSegments(segments, pool, nullptr);
}

void Gemma3Forward::RunSegments(std::span<const ForwardSegment> segments, ThreadPool& pool,
                                const LayerObserver* observer) {
  // Rows of the pass: each segment's tokens in turn; RoPE angles of each row's own position,
  // shared by every layer of a kind.
  segments_ = segments;
  size_t n = 0;
  for (size_t s = 0; s < segments.size(); ++s) {
    const size_t len = segments[s].tokens.size();
    segment_first_row_[s] = static_cast<uint32_t>(n);
    std::fill_n(row_segment_.begin() + static_cast<std::ptrdiff_t>(n), len, static_cast<uint32_t>(s));
    rope_.Fill(segments[s].start, len, n);
    n += len;
  }
  // Embedding lookup, scaled by sqrt(hidden): x[n, H].
  Embed();
  for (int l = 0; l < cfg_.num_layers; ++l) {
    // x += post_attn_norm(o_proj(attention(input_norm(x)))), storing each segment's keys and values.
    AttentionBlock(l, n, pool);
    // x += post_ffn_norm(down(gelu_tanh(gate(h)) * up(h))), h = pre_ffn_norm(x).
    MlpBlock(l, n, pool);
    if (observer != nullptr && *observer) (*observer)(l, buf_.x.data(), n);
  }
  // Final norm into xn (the head reads it).
  FinalNorm(n);
  segments_ = {};
}

void Gemma3Forward::Embed() {
  const size_t H = static_cast<size_t>(cfg_.hidden);
  const KernelMatrix& embed = model_.embedding();
  float* x = buf_.x.data();
  for (const ForwardSegment& seg : segments_) {
    for (int32_t token : seg.tokens) {
      LookupRow(embed, static_cast<size_t>(token), x);
      Scale(x, model_.embedding_scale(), H);
      x += H;
    }
  }
}

void Gemma3Forward::AttentionBlock(int l, size_t n, ThreadPool& pool) {
  const LayerWeights& L = model_.layer(l);
  const size_t H = static_cast<size_t>(cfg_.hidden), Q = static_cast<size_t>(cfg_.q_dim()),
               KV = static_cast<size_t>(cfg_.kv_dim()), hd = static_cast<size_t>(cfg_.head_dim),
               heads = static_cast<size_t>(cfg_.num_heads), kv_heads = static_cast<size_t>(cfg_.num_kv_heads);
  const float eps = cfg_.rms_norm_eps;
  const float q_scale = 1.0f / std::sqrt(cfg_.query_pre_attn_scalar);
  float *x = buf_.x.data(), *xn = buf_.xn.data(), *q = buf_.q.data(), *k = buf_.k.data(), *v = buf_.v.data();

  // Block input: xn = input_norm(x).
  ForTokens(pool, n, [&](size_t t0, size_t t1) {
    for (size_t t = t0; t < t1; ++t) RmsNorm(x + t * H, L.input_norm.data(), eps, H, xn + t * H);
  });
  // Projections: q[n, Q], k[n, KV], v[n, KV].
  MatMulParallel({{&L.q_proj, q, Q}, {&L.k_proj, k, KV}, {&L.v_proj, v, KV}}, xn, n, H, buf_.packed.data(), pool);
  // LoRA: q/k/v += B'(A xn).
  if (lora_) ApplyLora({{Lora(l, 0), q, Q}, {Lora(l, 1), k, KV}, {Lora(l, 2), v, KV}}, xn, n, H, LoraBuffers(), pool);
  // Per-head q/k RMSNorm, RoPE, and the query scale.
  ForTokens(pool, n, [&](size_t t0, size_t t1) {
    for (size_t t = t0; t < t1; ++t) {
      const float* cs = rope_.cos(L.kind, t);
      const float* sn = rope_.sin(L.kind, t);
      for (size_t h = 0; h < heads; ++h) {
        float* qh = q + t * Q + h * hd;
        RmsNorm(qh, L.q_norm.data(), eps, hd, qh);
        ApplyRope(qh, cs, sn, hd);
        Scale(qh, q_scale, hd);
      }
      for (size_t h = 0; h < kv_heads; ++h) {
        float* kh = k + t * KV + h * hd;
        RmsNorm(kh, L.k_norm.data(), eps, hd, kh);
        ApplyRope(kh, cs, sn, hd);
      }
    }
  });
  // Each segment's keys/values go to its own cache: global layers before attending (rows =
  // positions, one run), sliding layers afterwards (see KvCache::VisibleTo: a chunk may wrap the ring).
  auto commit = [&](LayerKind when) {
    for (size_t s = 0; s < segments_.size(); ++s) {
      const ForwardSegment& seg = segments_[s];
      if (seg.cache->kind(l) != when) continue;
      const size_t row = segment_first_row_[s];
      seg.cache->Commit(l, seg.start, seg.tokens.size(), k + row * KV, v + row * KV);
    }
  };
  commit(LayerKind::kGlobal);
  // Causal (windowed) attention within each segment: attn[n, Q].
  Attention(l, n, pool);
  commit(LayerKind::kSliding);
  // Output projection, post-attention norm, residual: x += post_attn_norm(o_proj(attn)).
  float* proj = buf_.proj.data();
  MatMulParallel({{&L.o_proj, proj, H}}, buf_.attn.data(), n, Q, buf_.packed.data(), pool);
  // LoRA: proj += B'(A attn).
  if (lora_) ApplyLora({{Lora(l, 3), proj, H}}, buf_.attn.data(), n, Q, LoraBuffers(), pool);
  ForTokens(pool, n, [&](size_t t0, size_t t1) {
    for (size_t t = t0; t < t1; ++t) {
      float* p = proj + t * H;
      RmsNorm(p, L.post_attn_norm.data(), eps, H, p);
      AddInPlace(x + t * H, p, H);
    }
  });
}

void Gemma3Forward::Attention(int layer, size_t n, ThreadPool& pool) {
  const size_t Q = static_cast<size_t>(cfg_.q_dim()), KV = static_cast<size_t>(cfg_.kv_dim()),
               hd = static_cast<size_t>(cfg_.head_dim), kv_heads = static_cast<size_t>(cfg_.num_kv_heads),
               group = static_cast<size_t>(cfg_.num_heads) / kv_heads;
  const float softcap = cfg_.attn_logit_softcap;
  const size_t S = buf_.scores_stride;
  const AttentionSplit split = SplitAttention(n, kv_heads, group, pool.num_threads());
  const size_t heads_per_task = split.heads_per_task, tasks_per_kv = split.tasks_per_kv;

  pool.Run(n * kv_heads * tasks_per_kv, [&](size_t task, int thread) {
    const size_t t = task / (kv_heads * tasks_per_kv), rest = task % (kv_heads * tasks_per_kv);
    const size_t kvh = rest / tasks_per_kv, h0 = kvh * group + (rest % tasks_per_kv) * heads_per_task;
    const uint32_t s = row_segment_[t];
    const ForwardSegment& seg = segments_[s];
    const size_t row0 = segment_first_row_[s];
    const KvCache::Visible kv = seg.cache->VisibleTo(layer, seg.start + (t - row0), seg.start, buf_.k.data() + row0 * KV,
                                                     buf_.v.data() + row0 * KV, kvh);
    const float* q = buf_.q.data() + t * Q + h0 * hd;
    float* scores = buf_.scores.data() + static_cast<size_t>(thread) * group * S;
    AttentionScores(q, hd, heads_per_task, kv.keys, kv.runs, KV, hd, scores, S);
    for (size_t g = 0; g < heads_per_task; ++g) {
      float* sg = scores + g * S;
      if (softcap > 0) {
        for (size_t j = 0; j < kv.count; ++j) sg[j] = softcap * std::tanh(sg[j] / softcap);
      }
      Softmax(sg, kv.count);
    }
    AttentionMix(scores, S, heads_per_task, kv.values, kv.runs, KV, hd, buf_.attn.data() + t * Q + h0 * hd, hd);
  });
}

void Gemma3Forward::MlpBlock(int l, size_t n, ThreadPool& pool) {
  const LayerWeights& L = model_.layer(l);
  const size_t H = static_cast<size_t>(cfg_.hidden), I = static_cast<size_t>(cfg_.intermediate);
  const float eps = cfg_.rms_norm_eps;
  float *x = buf_.x.data(), *xn = buf_.xn.data(), *gate = buf_.gate.data(), *up = buf_.up.data(),
        *proj = buf_.proj.data();

  // Block input: xn = pre_ffn_norm(x).
  ForTokens(pool, n, [&](size_t t0, size_t t1) {
    for (size_t t = t0; t < t1; ++t) RmsNorm(x + t * H, L.pre_ffn_norm.data(), eps, H, xn + t * H);
  });
  // gate[n, I], up[n, I] in one dispatch.
  MatMulParallel({{&L.gate_proj, gate, I}, {&L.up_proj, up, I}}, xn, n, H, buf_.packed.data(), pool);
  // LoRA: gate/up += B'(A xn).
  if (lora_) ApplyLora({{Lora(l, 4), gate, I}, {Lora(l, 5), up, I}}, xn, n, H, LoraBuffers(), pool);
  // gate = gelu_tanh(gate) * up.
  ForTokens(pool, n, [&](size_t t0, size_t t1) {
    for (size_t t = t0; t < t1; ++t) GeluTanhMul(gate + t * I, up + t * I, I);
  });
  // proj[n, H] = down_proj(gate).
  MatMulParallel({{&L.down_proj, proj, H}}, gate, n, I, buf_.packed.data(), pool);
  // LoRA: proj += B'(A gate).
  if (lora_) ApplyLora({{Lora(l, 6), proj, H}}, gate, n, I, LoraBuffers(), pool);
  // Post-FFN norm and residual: x += post_ffn_norm(proj).
  ForTokens(pool, n, [&](size_t t0, size_t t1) {
    for (size_t t = t0; t < t1; ++t) {
      float* p = proj + t * H;
      RmsNorm(p, L.post_ffn_norm.data(), eps, H, p);
      AddInPlace(x + t * H, p, H);
    }
  });
}

void Gemma3Forward::FinalNorm(size_t n) {
  const size_t H = static_cast<size_t>(cfg_.hidden);
  for (size_t t = 0; t < n; ++t)
    RmsNorm(buf_.x.data() + t * H, model_.final_norm().data(), cfg_.rms_norm_eps, H, buf_.xn.data() + t * H);
}

}  // namespace fgemma
