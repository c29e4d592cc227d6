// Gemma 3 forward pass, following the reference (google/gemma_pytorch, float32 compute):
//
//   x = embed[token] * sqrt(hidden)
//   per layer:  h = x + post_attn_norm(attention(input_norm(x)))
//               x = h + post_ffn_norm(down(gelu_tanh(gate(n)) * up(n))),  n = pre_ffn_norm(h)
//   out = final_norm(x)                       (the tied head is applied by the runtime)
//
// attention: q, k, v projections; RMSNorm per head on q and k; split-half RoPE (base 1e4 on
// sliding layers, rope_theta / linear scaling on global ones); q *= query_pre_attn_scalar^-0.5;
// causal softmax over keys j <= i (and j > i - window on sliding layers); GQA: query head h reads
// kv head h / (heads / kv_heads).
#include "model/gemma3_forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/matmul.h"
#include "kernels/attention.h"
#include "kernels/ops.h"
#include "kernels/vec.h"

namespace fgemma {
namespace {

size_t KindIndex(LayerKind k) { return k == LayerKind::kGlobal ? 1 : 0; }

}  // namespace

Result<std::unique_ptr<Gemma3Forward>> Gemma3Forward::Create(const Model& model, const ForwardOptions& options,
                                                             int num_threads) {
  const ModelConfig& c = model.config();
  auto f = std::unique_ptr<Gemma3Forward>(new Gemma3Forward(model));
  f->max_batch_ = std::max<size_t>(1, options.max_batch);
  f->context_ = options.context == 0 ? static_cast<size_t>(c.max_position_embeddings) : options.context;
  if (f->context_ > static_cast<size_t>(c.max_position_embeddings))
    return InvalidArgument("context " + std::to_string(f->context_) + " exceeds the model's max_position_embeddings " +
                           std::to_string(c.max_position_embeddings));
  const size_t B = f->max_batch_, H = static_cast<size_t>(c.hidden), Q = static_cast<size_t>(c.q_dim()),
               KV = static_cast<size_t>(c.kv_dim()), I = static_cast<size_t>(c.intermediate),
               half = static_cast<size_t>(c.head_dim) / 2, W = static_cast<size_t>(c.sliding_window);

  // KV cache sizes, checked for overflow of size_t on 32-bit builds.
  for (int l = 0; l < c.num_layers; ++l) {
    LayerKvCache lc;
    lc.kind = c.layer_kinds[static_cast<size_t>(l)];
    lc.rows = lc.kind == LayerKind::kGlobal ? f->context_ : std::min(W, f->context_);
    const uint64_t elems = static_cast<uint64_t>(lc.rows) * KV;
    if (elems * sizeof(float) > static_cast<uint64_t>(SIZE_MAX / 4))
      return OutOfRange("KV cache of " + std::to_string(elems * 8) + " bytes for layer " + std::to_string(l) +
                        " does not fit this address space; use a shorter context");
    lc.keys = FloatBuffer(static_cast<size_t>(elems));
    lc.values = FloatBuffer(static_cast<size_t>(elems));
    f->cache_.push_back(std::move(lc));
  }
  f->x_ = FloatBuffer(B * H);
  f->xn_ = FloatBuffer(B * H);
  f->q_ = FloatBuffer(B * Q);
  f->k_ = FloatBuffer(B * KV);
  f->v_ = FloatBuffer(B * KV);
  f->attn_ = FloatBuffer(B * Q);
  f->proj_ = FloatBuffer(B * H);
  f->gate_ = FloatBuffer(B * I);
  f->up_ = FloatBuffer(B * I);
  const float thetas[2] = {c.rope_theta_local, c.rope_theta_global};
  const float scalings[2] = {1.0f, c.rope_scaling_factor};
  for (int k = 0; k < 2; ++k) {
    f->rope_cos_[k] = FloatBuffer(B * half);
    f->rope_sin_[k] = FloatBuffer(B * half);
    f->inv_freq_[k] = FloatBuffer(half);
    RopeInverseFrequencies(thetas[k], scalings[k], static_cast<size_t>(c.head_dim), f->inv_freq_[k].data());
  }
  // A query sees at most `context` keys on a global layer (window + batch on a sliding one).
  f->scores_stride_ = std::max(f->context_, W + B);
  const size_t group = static_cast<size_t>(c.num_heads / c.num_kv_heads);
  f->scores_ = FloatBuffer(static_cast<size_t>(std::max(1, num_threads)) * group * f->scores_stride_);

  size_t packed = 0;
  for (int l = 0; l < c.num_layers; ++l) {
    const LayerWeights& L = model.layer(l);
    for (const KernelMatrix* w : L.Projections()) packed = std::max(packed, PackedActivationBytes(w->dtype, w->cols, B));
  }
  f->packed_.resize(packed);
  return f;
}

uint64_t Gemma3Forward::kv_bytes(LayerKind kind) const {
  uint64_t total = 0;
  for (const auto& lc : cache_) {
    if (lc.kind == kind) total += 2ull * lc.keys.size() * sizeof(float);
  }
  return total;
}

void Gemma3Forward::CopyCacheFrom(const Gemma3Forward& other, size_t n) {
  const size_t KV = static_cast<size_t>(cfg_.kv_dim());
  for (size_t l = 0; l < cache_.size(); ++l) {
    const LayerKvCache& src = other.cache_[l];
    LayerKvCache& dst = cache_[l];
    // Ring rows hold position p at p % window in both (same model, same window), so the first rows
    // are the live ones in either layout.
    const size_t rows = std::min({n, src.rows, dst.rows});
    std::memcpy(dst.keys.data(), src.keys.data(), rows * KV * sizeof(float));
    std::memcpy(dst.values.data(), src.values.data(), rows * KV * sizeof(float));
  }
}

uint64_t Gemma3Forward::StateBytes(size_t n) const {
  uint64_t total = 0;
  for (const auto& lc : cache_) total += 2ull * std::min(n, lc.rows) * static_cast<uint64_t>(cfg_.kv_dim()) * sizeof(float);
  return total;
}

void Gemma3Forward::ExportState(size_t n, std::string* out) const {
  const size_t KV = static_cast<size_t>(cfg_.kv_dim());
  out->reserve(out->size() + StateBytes(n));
  for (const auto& lc : cache_) {
    const size_t bytes = std::min(n, lc.rows) * KV * sizeof(float);
    out->append(reinterpret_cast<const char*>(lc.keys.data()), bytes);
    out->append(reinterpret_cast<const char*>(lc.values.data()), bytes);
  }
}

Status Gemma3Forward::ImportState(size_t n, const uint8_t* data, size_t size) {
  if (n > context_) return OutOfRange("cached state of " + std::to_string(n) + " positions exceeds the context of " + std::to_string(context_));
  if (size != StateBytes(n)) return CorruptFile("cached state holds " + std::to_string(size) + " bytes, expected " + std::to_string(StateBytes(n)));
  const size_t KV = static_cast<size_t>(cfg_.kv_dim());
  for (auto& lc : cache_) {
    const size_t bytes = std::min(n, lc.rows) * KV * sizeof(float);
    std::memcpy(lc.keys.data(), data, bytes);
    std::memcpy(lc.values.data(), data + bytes, bytes);
    data += 2 * bytes;
  }
  return Status::Ok();
}

Status Gemma3Forward::ZeroState(size_t n) {
  if (n > context_) return OutOfRange(std::to_string(n) + " positions exceed the context of " + std::to_string(context_));
  const size_t KV = static_cast<size_t>(cfg_.kv_dim());
  for (auto& lc : cache_) {
    const size_t count = std::min(n, lc.rows) * KV;
    std::fill(lc.keys.data(), lc.keys.data() + count, 0.0f);
    std::fill(lc.values.data(), lc.values.data() + count, 0.0f);
  }
  return Status::Ok();
}

// Calls fn(t0, t1) on ranges that cover [0, n): spread over the pool for a batch, inline for a few
// tokens (decode). Every per-token step is independent of the split, so results are the same bits.
template <typename Fn>
static void ForTokens(ThreadPool& pool, size_t n, Fn&& fn) {
  const size_t threads = static_cast<size_t>(pool.num_threads());
  if (threads == 1 || n < 8) {
    fn(size_t{0}, n);
    return;
  }
  const size_t per = (n + threads - 1) / threads;
  pool.Run(threads, [&](size_t task, int) {
    const size_t t0 = task * per, t1 = std::min(n, t0 + per);
    if (t0 < t1) fn(t0, t1);
  });
}

void Gemma3Forward::MatMulParallel(std::initializer_list<Projection> projections, const float* x, size_t n,
                                   size_t x_stride, ThreadPool& pool) {
  const TensorView& first = *projections.begin()->w;
  bool same_input_format = true;
  size_t total_rows = 0;
  for (const Projection& p : projections) {
    same_input_format &= p.w->dtype == first.dtype && p.w->cols == first.cols;
    total_rows += p.w->rows;
  }
  if (!same_input_format) {  // mixed weight types (some GGUF files): one dispatch each
    for (const Projection& p : projections) MatMulParallel({p}, x, n, x_stride, pool);
    return;
  }
  Activations a;
  a.data = x;
  a.stride = x_stride;
  a.num_tokens = n;
  if (PackedActivationBytes(first.dtype, first.cols, n) > 0) {
    // Token records are independent: pack slices of the batch in parallel.
    const size_t record = PackedActivationBytes(first.dtype, first.cols, 1);
    ForTokens(pool, n, [&](size_t t0, size_t t1) {
      Activations part = a;
      part.data = x + t0 * x_stride;
      part.num_tokens = t1 - t0;
      PackActivations(first.dtype, first.cols, &part, packed_.data() + t0 * record);
    });
    a.packed = packed_.data();
    a.packed_stride = record;
  }
  // ~4 slices per thread balance uneven progress; 16-row multiples suit every kernel's tiling.
  const size_t threads = static_cast<size_t>(pool.num_threads());
  size_t block = (total_rows + threads * 4 - 1) / (threads * 4);
  block = std::max<size_t>(16, (block + 15) / 16 * 16);
  // Slices never straddle two weights: each weight is cut into ceil(rows / block) slices.
  size_t tasks = 0;
  for (const Projection& p : projections) tasks += (p.w->rows + block - 1) / block;
  pool.Run(tasks, [&](size_t task, int) {
    for (const Projection& p : projections) {
      const size_t slices = (p.w->rows + block - 1) / block;
      if (task < slices) {
        const size_t r0 = task * block;
        MatMul(*p.w, a, p.y, p.y_stride, r0, std::min(p.w->rows, r0 + block));
        return;
      }
      task -= slices;
    }
  });
}

void Gemma3Forward::Attention(int layer, size_t n, size_t start, ThreadPool& pool) {
  const LayerKvCache& lc = cache_[static_cast<size_t>(layer)];
  const size_t Q = static_cast<size_t>(cfg_.q_dim()), KV = static_cast<size_t>(cfg_.kv_dim()),
               hd = static_cast<size_t>(cfg_.head_dim), kv_heads = static_cast<size_t>(cfg_.num_kv_heads),
               group = static_cast<size_t>(cfg_.num_heads) / kv_heads, W = static_cast<size_t>(cfg_.sliding_window);
  const bool sliding = lc.kind == LayerKind::kSliding;
  const float softcap = cfg_.attn_logit_softcap;
  // A task is one position and a run of query heads sharing a KV head: the whole group (each key
  // and value row read once for all of them) unless that leaves threads idle (decode).
  const size_t threads = static_cast<size_t>(pool.num_threads());
  size_t split = 1;
  while (split < group && n * kv_heads * split < threads && group % (split * 2) == 0) split *= 2;
  size_t heads_per_task = group / split;  // the largest divisor of the group that the kernel takes
  while (heads_per_task > kMaxAttentionGroup || group % heads_per_task != 0) --heads_per_task;
  const size_t tasks_per_kv = group / heads_per_task;

  pool.Run(n * kv_heads * tasks_per_kv, [&](size_t task, int thread) {
    const size_t t = task / (kv_heads * tasks_per_kv), rest = task % (kv_heads * tasks_per_kv);
    const size_t kvh = rest / tasks_per_kv, h0 = kvh * group + (rest % tasks_per_kv) * heads_per_task;
    const size_t pos = start + t;
    const size_t lo = sliding && pos + 1 > W ? pos + 1 - W : 0;
    const size_t count = pos + 1 - lo;
    // Keys/values of positions [lo, pos] as contiguous runs. Global layers: cache rows = positions
    // (this chunk's rows were stored before attending). Sliding layers: positions before the chunk
    // from the ring (row = position % rows, wrapping at most once), the chunk's own from k_/v_ (the
    // ring may already be overwritten by later chunk positions).
    KvRun keys[3], values[3];
    size_t runs = 0;
    auto add = [&](const float* k, const float* v, size_t rows) {
      if (rows == 0) return;
      keys[runs] = {k + kvh * hd, rows};
      values[runs] = {v + kvh * hd, rows};
      ++runs;
    };
    if (!sliding) {
      add(lc.keys.data() + lo * KV, lc.values.data() + lo * KV, count);
    } else {
      const size_t cached_end = std::min(start, pos + 1);
      for (size_t j = lo; j < cached_end;) {
        const size_t row = j % lc.rows, len = std::min(cached_end - j, lc.rows - row);
        add(lc.keys.data() + row * KV, lc.values.data() + row * KV, len);
        j += len;
      }
      const size_t first = std::max(lo, start);
      add(k_.data() + (first - start) * KV, v_.data() + (first - start) * KV, pos + 1 - first);
    }
    const float* q = q_.data() + t * Q + h0 * hd;
    float* scores = scores_.data() + static_cast<size_t>(thread) * group * scores_stride_;
    AttentionScores(q, hd, heads_per_task, keys, runs, KV, hd, scores, scores_stride_);
    for (size_t g = 0; g < heads_per_task; ++g) {
      float* sg = scores + g * scores_stride_;
      if (softcap > 0) {
        for (size_t j = 0; j < count; ++j) sg[j] = softcap * std::tanh(sg[j] / softcap);
      }
      Softmax(sg, count);
    }
    AttentionMix(scores, scores_stride_, heads_per_task, values, runs, KV, hd, attn_.data() + t * Q + h0 * hd, hd);
  });
}

void Gemma3Forward::Run(std::span<const int32_t> tokens, size_t start, ThreadPool& pool, const LayerObserver* observer) {
  const size_t n = tokens.size();
  const size_t H = static_cast<size_t>(cfg_.hidden), Q = static_cast<size_t>(cfg_.q_dim()),
               KV = static_cast<size_t>(cfg_.kv_dim()), I = static_cast<size_t>(cfg_.intermediate),
               hd = static_cast<size_t>(cfg_.head_dim), half = hd / 2, heads = static_cast<size_t>(cfg_.num_heads),
               kv_heads = static_cast<size_t>(cfg_.num_kv_heads);
  const float eps = cfg_.rms_norm_eps;
  const float q_scale = 1.0f / std::sqrt(cfg_.query_pre_attn_scalar);

  // 1. Embedding lookup, scaled by sqrt(hidden): x[n, H].
  const KernelMatrix& embed = model_.embedding();
  for (size_t t = 0; t < n; ++t) {
    float* x = x_.data() + t * H;
    LookupRow(embed, static_cast<size_t>(tokens[t]), x);
    Scale(x, model_.embedding_scale(), H);
  }
  // 2. RoPE angles for each position, per layer kind: cos/sin[n, half].
  for (size_t k = 0; k < 2; ++k) {
    for (size_t t = 0; t < n; ++t)
      RopeAngles(inv_freq_[k].data(), half, static_cast<int>(start + t), rope_cos_[k].data() + t * half,
                 rope_sin_[k].data() + t * half);
  }

  for (int l = 0; l < cfg_.num_layers; ++l) {
    const LayerWeights& L = model_.layer(l);
    LayerKvCache& lc = cache_[static_cast<size_t>(l)];
    const size_t kind = KindIndex(L.kind);

    // 3. Attention block input: xn = input_norm(x).
    ForTokens(pool, n, [&](size_t t0, size_t t1) {
      for (size_t t = t0; t < t1; ++t) RmsNorm(x_.data() + t * H, L.input_norm.data(), eps, H, xn_.data() + t * H);
    });
    // 4. Projections: q[n, Q], k[n, KV], v[n, KV].
    MatMulParallel({{&L.q_proj, q_.data(), Q}, {&L.k_proj, k_.data(), KV}, {&L.v_proj, v_.data(), KV}}, xn_.data(), n,
                   H, pool);
    // 5. Per-head q/k RMSNorm, RoPE, and the query scale.
    ForTokens(pool, n, [&](size_t t0, size_t t1) {
      for (size_t t = t0; t < t1; ++t) {
        const float* cs = rope_cos_[kind].data() + t * half;
        const float* sn = rope_sin_[kind].data() + t * half;
        for (size_t h = 0; h < heads; ++h) {
          float* q = q_.data() + t * Q + h * hd;
          RmsNorm(q, L.q_norm.data(), eps, hd, q);
          ApplyRope(q, cs, sn, hd);
          Scale(q, q_scale, hd);
        }
        for (size_t h = 0; h < kv_heads; ++h) {
          float* k = k_.data() + t * KV + h * hd;
          RmsNorm(k, L.k_norm.data(), eps, hd, k);
          ApplyRope(k, cs, sn, hd);
        }
      }
    });
    // 6. Global layers store the chunk's keys/values before attending (rows = positions).
    if (L.kind == LayerKind::kGlobal) {
      std::memcpy(lc.keys.data() + start * KV, k_.data(), n * KV * sizeof(float));
      std::memcpy(lc.values.data() + start * KV, v_.data(), n * KV * sizeof(float));
    }
    // 7. Causal (windowed) attention: attn[n, Q].
    Attention(l, n, start, pool);
    // 8. Sliding layers commit the chunk's last `window` positions to the ring afterwards.
    if (L.kind == LayerKind::kSliding) {
      const size_t first = n > lc.rows ? n - lc.rows : 0;
      for (size_t t = first; t < n; ++t) {
        const size_t row = (start + t) % lc.rows;
        std::memcpy(lc.keys.data() + row * KV, k_.data() + t * KV, KV * sizeof(float));
        std::memcpy(lc.values.data() + row * KV, v_.data() + t * KV, KV * sizeof(float));
      }
    }
    // 9. Output projection, post-attention norm, residual: x += post_attn_norm(o_proj(attn)).
    MatMulParallel({{&L.o_proj, proj_.data(), H}}, attn_.data(), n, Q, pool);
    ForTokens(pool, n, [&](size_t t0, size_t t1) {
      for (size_t t = t0; t < t1; ++t) {
        float* p = proj_.data() + t * H;
        RmsNorm(p, L.post_attn_norm.data(), eps, H, p);
        AddInPlace(x_.data() + t * H, p, H);
      }
    });
    // 10. MLP: xn = pre_ffn_norm(x); gate/up [n, I]; down(gelu_tanh(gate) * up) -> proj [n, H].
    ForTokens(pool, n, [&](size_t t0, size_t t1) {
      for (size_t t = t0; t < t1; ++t) RmsNorm(x_.data() + t * H, L.pre_ffn_norm.data(), eps, H, xn_.data() + t * H);
    });
    MatMulParallel({{&L.gate_proj, gate_.data(), I}, {&L.up_proj, up_.data(), I}}, xn_.data(), n, H, pool);
    ForTokens(pool, n, [&](size_t t0, size_t t1) {
      for (size_t t = t0; t < t1; ++t) GeluTanhMul(gate_.data() + t * I, up_.data() + t * I, I);
    });
    MatMulParallel({{&L.down_proj, proj_.data(), H}}, gate_.data(), n, I, pool);
    // 11. Post-FFN norm and residual: x += post_ffn_norm(mlp).
    ForTokens(pool, n, [&](size_t t0, size_t t1) {
      for (size_t t = t0; t < t1; ++t) {
        float* p = proj_.data() + t * H;
        RmsNorm(p, L.post_ffn_norm.data(), eps, H, p);
        AddInPlace(x_.data() + t * H, p, H);
      }
    });
    if (observer != nullptr && *observer) (*observer)(l, x_.data(), n);
  }
  // 12. Final norm into xn (the head reads it).
  for (size_t t = 0; t < n; ++t) RmsNorm(x_.data() + t * H, model_.final_norm().data(), eps, H, xn_.data() + t * H);
}

}  // namespace fgemma
