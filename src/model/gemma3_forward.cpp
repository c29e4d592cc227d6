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
  f->row_blocks_.resize(f->max_batch_);
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
    RmsNormRows(x + t0 * H, H, L.input_norm.data(), eps, H, t1 - t0, xn + t0 * H, H);
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
      RmsNormRows(q + t * Q, hd, L.q_norm.data(), eps, hd, heads, q + t * Q, hd);
      for (size_t h = 0; h < heads; ++h) {
        float* qh = q + t * Q + h * hd;
        ApplyRope(qh, cs, sn, hd);
        Scale(qh, q_scale, hd);
      }
      RmsNormRows(k + t * KV, hd, L.k_norm.data(), eps, hd, kv_heads, k + t * KV, hd);
      for (size_t h = 0; h < kv_heads; ++h) ApplyRope(k + t * KV + h * hd, cs, sn, hd);
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
    RmsNormRows(proj + t0 * H, H, L.post_attn_norm.data(), eps, H, t1 - t0, proj + t0 * H, H);
    for (size_t t = t0; t < t1; ++t) AddInPlace(x + t * H, proj + t * H, H);
  });
}

void Gemma3Forward::Attention(int layer, size_t n, ThreadPool& pool) {
  const size_t kv_heads = static_cast<size_t>(cfg_.num_kv_heads), group = static_cast<size_t>(cfg_.num_heads) / kv_heads;
  const size_t hd = static_cast<size_t>(cfg_.head_dim), max_rows = buf_.attention_rows, S = buf_.scores_stride;
  // Tasks take blocks of rows of one segment (a draft's or a chunk's positions), split evenly: the
  // rows of a block read their segment's keys and values together, one key block at a time, so
  // each block comes from memory once for all of them instead of once per row. A pass of few
  // segments is cut into at least a block per thread where it has the rows.
  const size_t threads = static_cast<size_t>(pool.num_threads());
  const size_t want_blocks = (threads + kv_heads - 1) / kv_heads;
  size_t blocks = 0;
  for (size_t s = 0; s < segments_.size(); ++s) {
    const size_t len = segments_[s].tokens.size();
    const size_t parts = std::min(len, std::max((len + max_rows - 1) / max_rows, (len * want_blocks + n - 1) / n));
    for (size_t i = 0, row = segment_first_row_[s]; i < parts; ++i) {
      const size_t count = len * (i + 1) / parts - len * i / parts;
      row_blocks_[blocks++] = {static_cast<uint32_t>(row), static_cast<uint32_t>(count)};
      row += count;
    }
  }
  const size_t jobs = blocks * kv_heads;  // (row block, kv head) pairs
  if (jobs >= threads || group > kMaxAttentionGroup) {
    // Enough pairs for the pool (or a group too wide for the kernels): one task per pair, or per
    // part of its group of heads while that leaves threads idle.
    const AttentionSplit split = SplitAttention(blocks, kv_heads, group, pool.num_threads());
    const size_t heads = split.heads_per_task, tasks_per_kv = split.tasks_per_kv;
    pool.Run(jobs * tasks_per_kv, [&](size_t task, int thread) {
      const size_t job = task / tasks_per_kv, h0 = (job % kv_heads) * group + (task % tasks_per_kv) * heads;
      const AttentionRows rows = RowsOf(layer, job);
      float* scores = buf_.scores.data() + static_cast<size_t>(thread) * max_rows * group * S;
      ScoreRows(rows, h0, heads, rows.lo, rows.end, scores);
      for (size_t i = 0; i < rows.count; ++i)
        for (size_t g = 0; g < heads; ++g) SoftmaxRow(rows, i, scores + (i * group + g) * S);
      MixRows(rows, h0, heads, 0, hd, scores);
    });
    return;
  }
  // Fewer pairs than threads (decode): each pair's keys are split between `parts` tasks for the
  // scores, its (row, head) softmaxes likewise, and its output columns for the mix, so every key and
  // value is read once by one thread, with the whole group of heads (one read for all of them).
  // A score depends only on its key and a column's sum only on its column, whatever the split.
  // Pair `job` keeps its scores in thread block `job` for the three steps.
  const size_t parts = (threads + jobs - 1) / jobs;
  // Column cuts fall on multiples of 16 floats, the widest vector of any target (AVX-512), so a
  // column is in a vector or in the scalar tail alike in a slice and in the whole head.
  constexpr size_t kColumnUnit = 16;
  size_t column_parts = parts;
  while (column_parts > 1 && hd % (kColumnUnit * column_parts) != 0) --column_parts;
  auto scores_of = [&](size_t job) { return buf_.scores.data() + job * max_rows * group * S; };
  pool.Run(jobs * parts, [&](size_t task, int) {
    const size_t job = task / parts, part = task % parts;
    const AttentionRows rows = RowsOf(layer, job);
    const size_t span = rows.end - rows.lo;
    ScoreRows(rows, (job % kv_heads) * group, group, rows.lo + span * part / parts, rows.lo + span * (part + 1) / parts,
              scores_of(job));
  });
  pool.Run(jobs * max_rows * group, [&](size_t task, int) {
    const size_t job = task / (max_rows * group), i = task % (max_rows * group) / group, g = task % group;
    const AttentionRows rows = RowsOf(layer, job);
    if (i < rows.count) SoftmaxRow(rows, i, scores_of(job) + (i * group + g) * S);
  });
  pool.Run(jobs * column_parts, [&](size_t task, int) {
    const size_t job = task / column_parts, part = task % column_parts;
    const AttentionRows rows = RowsOf(layer, job);
    MixRows(rows, (job % kv_heads) * group, group, hd * part / column_parts, hd / column_parts, scores_of(job));
  });
}

Gemma3Forward::AttentionRows Gemma3Forward::RowsOf(int layer, size_t job) const {
  const size_t kv_heads = static_cast<size_t>(cfg_.num_kv_heads), KV = static_cast<size_t>(cfg_.kv_dim());
  const RowBlock rb = row_blocks_[job / kv_heads];
  const uint32_t s = row_segment_[rb.first];
  const ForwardSegment& seg = segments_[s];
  const size_t row0 = segment_first_row_[s];
  AttentionRows rows;
  rows.first_row = rb.first;
  rows.count = rb.count;
  for (size_t i = 0; i < rows.count; ++i) {
    rows.pos[i] = seg.start + (rb.first + i - row0);
    rows.vis[i] = seg.cache->VisibleTo(layer, rows.pos[i], seg.start, buf_.k.data() + row0 * KV,
                                       buf_.v.data() + row0 * KV, job % kv_heads);
  }
  rows.lo = rows.first(0);
  rows.end = rows.pos[rows.count - 1] + 1;
  return rows;
}

template <typename Fn>
void Gemma3Forward::ForEachKeyPart(const AttentionRows& rows, bool values, size_t from, size_t to, Fn&& fn) const {
  // Key blocks of positions [b, b + step): a block stays in cache while every row reads it. One
  // row reads its keys in one go.
  constexpr size_t kKeyBlock = 64;
  const size_t KV = static_cast<size_t>(cfg_.kv_dim()), step = rows.count == 1 ? to - from : kKeyBlock;
  for (size_t b = from; b < to; b += step) {
    for (size_t i = 0; i < rows.count; ++i) {
      const size_t lo = std::max(b, rows.first(i)), hi = std::min({b + step, to, rows.pos[i] + 1});
      if (lo >= hi) continue;
      const KvCache::Visible& vis = rows.vis[i];
      KvRun part[3];
      const size_t n = SliceKvRuns(values ? vis.values : vis.keys, vis.runs, KV, lo - rows.first(i), hi - lo, part);
      fn(i, lo - rows.first(i), part, n);
    }
  }
}

void Gemma3Forward::ScoreRows(const AttentionRows& rows, size_t h0, size_t heads, size_t from, size_t to,
                              float* scores) const {
  // scores[i, g, j] = q_i,g . k_j for the keys j of positions [from, to) each row sees.
  const size_t Q = static_cast<size_t>(cfg_.q_dim()), KV = static_cast<size_t>(cfg_.kv_dim()),
               hd = static_cast<size_t>(cfg_.head_dim), group = static_cast<size_t>(cfg_.num_heads / cfg_.num_kv_heads),
               S = buf_.scores_stride;
  ForEachKeyPart(rows, false, from, to, [&](size_t i, size_t j0, const KvRun* part, size_t n) {
    const float* q = buf_.q.data() + (rows.first_row + i) * Q + h0 * hd;
    AttentionScores(q, hd, heads, part, n, KV, hd, scores + i * group * S + j0, S);
  });
}

void Gemma3Forward::SoftmaxRow(const AttentionRows& rows, size_t i, float* scores) const {
  // p = softmax(softcap(scores)) over the row's keys.
  const float softcap = cfg_.attn_logit_softcap;
  const size_t count = rows.vis[i].count;
  if (softcap > 0) {
    for (size_t j = 0; j < count; ++j) scores[j] = softcap * std::tanh(scores[j] / softcap);
  }
  Softmax(scores, count);
}

void Gemma3Forward::MixRows(const AttentionRows& rows, size_t h0, size_t heads, size_t col0, size_t cols,
                            const float* p) {
  // attn[i, h0 + g, col0 : col0 + cols] = sum_j p[i, g, j] v_j, each sum continued block after
  // block (the bits of one sum).
  const size_t Q = static_cast<size_t>(cfg_.q_dim()), KV = static_cast<size_t>(cfg_.kv_dim()),
               hd = static_cast<size_t>(cfg_.head_dim), group = static_cast<size_t>(cfg_.num_heads / cfg_.num_kv_heads),
               S = buf_.scores_stride;
  ForEachKeyPart(rows, true, rows.lo, rows.end, [&](size_t i, size_t j0, const KvRun* part, size_t n) {
    KvRun columns[3];
    for (size_t r = 0; r < n; ++r) columns[r] = {part[r].rows + col0, part[r].count};
    float* out = buf_.attn.data() + (rows.first_row + i) * Q + h0 * hd + col0;
    AttentionMix(p + i * group * S + j0, S, heads, columns, n, KV, cols, out, hd, j0 > 0);
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
    RmsNormRows(x + t0 * H, H, L.pre_ffn_norm.data(), eps, H, t1 - t0, xn + t0 * H, H);
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
    RmsNormRows(proj + t0 * H, H, L.post_ffn_norm.data(), eps, H, t1 - t0, proj + t0 * H, H);
    for (size_t t = t0; t < t1; ++t) AddInPlace(x + t * H, proj + t * H, H);
  });
}

void Gemma3Forward::FinalNorm(size_t n) {
  const size_t H = static_cast<size_t>(cfg_.hidden);
  RmsNormRows(buf_.x.data(), H, model_.final_norm().data(), cfg_.rms_norm_eps, H, n, buf_.xn.data(), H);
}

}  // namespace fgemma
