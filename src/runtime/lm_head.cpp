#include "runtime/lm_head.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>

#include "kernels/matmul.h"

namespace fgemma {
namespace {
constexpr size_t kBlockRows = 2048;  // 2048 x 640 bf16 = 2.6 MB of weights per task

inline bool Better(float v, int32_t id, float best_v, int32_t best_id) {
  return v > best_v || (v == best_v && id < best_id);
}
}  // namespace

LmHead::LmHead(const Model& model, int num_threads, size_t max_tokens)
    : model_(model),
      max_tokens_(std::max<size_t>(1, max_tokens)),
      block_scratch_(static_cast<size_t>(num_threads) * max_tokens_ * kBlockRows),
      gathered_(max_tokens_ > 1 ? max_tokens_ * model.embedding().cols : 0),
      packed_(PackedActivationBytes(model.embedding().dtype, model.embedding().cols, max_tokens_)),
      best_(static_cast<size_t>(num_threads) * max_tokens_) {}

void LmHead::Finish(float* logits, size_t count, size_t id_base, const int32_t* ids, const uint64_t* mask,
                    Best& best) const {
  const float cap = model_.config().final_logit_softcap;
  for (size_t i = 0; i < count; ++i) {
    float v = logits[i];
    if (cap > 0) logits[i] = v = cap * std::tanh(v / cap);
    const int32_t id = ids ? ids[i] : static_cast<int32_t>(id_base + i);
    if (mask && !(mask[static_cast<uint32_t>(id) >> 6] >> (id & 63) & 1)) continue;
    if (Better(v, id, best.value, best.id)) best = {v, id};
  }
}

void LmHead::Compute(const float* hidden, HeadRequest& req, ThreadPool& pool) {
  const KernelMatrix& E = model_.embedding();
  Activations a;
  a.data = hidden;
  a.stride = E.cols;
  a.num_tokens = 1;
  if (!packed_.empty()) PackActivations(E.dtype, E.cols, &a, packed_.data());
  for (auto& b : best_) b = {-std::numeric_limits<float>::infinity(), std::numeric_limits<int32_t>::max()};

  if (req.candidates.empty()) {
    const size_t tasks = (E.rows + kBlockRows - 1) / kBlockRows;
    pool.Run(tasks, [&](size_t task, int thread) {
      const size_t r0 = task * kBlockRows, r1 = std::min(E.rows, r0 + kBlockRows);
      // Write straight into the caller's logits when given; else into this thread's scratch.
      float* out = req.logits ? req.logits + r0 : block_scratch_.data() + static_cast<size_t>(thread) * kBlockRows;
      MatMul(RowSlice(E, r0, r1), a, out, 0, 0, r1 - r0);
      Finish(out, r1 - r0, r0, nullptr, req.allowed_mask, best_[static_cast<size_t>(thread)]);
    });
  } else {
    const size_t n = req.candidates.size();
    constexpr size_t per_task = 64;
    static_assert(per_task <= kBlockRows);
    const size_t tasks = (n + per_task - 1) / per_task;
    pool.Run(tasks, [&](size_t task, int thread) {
      const size_t i0 = task * per_task, i1 = std::min(n, i0 + per_task);
      // out[k] holds candidate i0 + k: the caller's logits, or this thread's scratch (per_task <= kBlockRows).
      float* out = req.logits ? req.logits + i0 : block_scratch_.data() + static_cast<size_t>(thread) * kBlockRows;
      MatMulRows(E, a, req.candidates.subspan(i0, i1 - i0), out);
      Finish(out, i1 - i0, 0, req.candidates.data() + i0, req.allowed_mask, best_[static_cast<size_t>(thread)]);
    });
  }
  // The best of the threads' bests: the order of the fold does not matter (Better is a total order).
  Best best = best_[0];
  for (size_t t = 0; t < static_cast<size_t>(pool.num_threads()); ++t) {
    if (Better(best_[t].value, best_[t].id, best.value, best.id)) best = best_[t];
  }
  req.argmax = best.id;
  req.max_logit = best.value;
}

void LmHead::ComputeFull(std::span<const float* const> hidden, std::span<HeadRequest* const> reqs, ThreadPool& pool) {
  const size_t m = reqs.size();
  if (m == 0) return;
  if (m == 1) return Compute(hidden[0], *reqs[0], pool);
  const KernelMatrix& E = model_.embedding();
  const size_t H = E.cols;
  // The hidden states side by side: one activation block [m, H] for every block of the embedding.
  for (size_t t = 0; t < m; ++t) std::memcpy(gathered_.data() + t * H, hidden[t], H * sizeof(float));
  Activations a;
  a.data = gathered_.data();
  a.stride = H;
  a.num_tokens = m;
  if (!packed_.empty()) PackActivations(E.dtype, E.cols, &a, packed_.data());
  for (auto& b : best_) b = {-std::numeric_limits<float>::infinity(), std::numeric_limits<int32_t>::max()};

  const size_t tasks = (E.rows + kBlockRows - 1) / kBlockRows;
  pool.Run(tasks, [&](size_t task, int thread) {
    const size_t r0 = task * kBlockRows, r1 = std::min(E.rows, r0 + kBlockRows);
    // out[t * kBlockRows + i]: row r0 + i for position t.
    float* out = block_scratch_.data() + static_cast<size_t>(thread) * max_tokens_ * kBlockRows;
    MatMul(RowSlice(E, r0, r1), a, out, kBlockRows, 0, r1 - r0);
    for (size_t t = 0; t < m; ++t) {
      float* o = out + t * kBlockRows;
      Finish(o, r1 - r0, r0, nullptr, reqs[t]->allowed_mask, best_[static_cast<size_t>(thread) * max_tokens_ + t]);
      if (reqs[t]->logits) std::memcpy(reqs[t]->logits + r0, o, (r1 - r0) * sizeof(float));
    }
  });
  for (size_t t = 0; t < m; ++t) {
    Best best = best_[t];
    for (size_t th = 0; th < static_cast<size_t>(pool.num_threads()); ++th) {
      const Best& b = best_[th * max_tokens_ + t];
      if (Better(b.value, b.id, best.value, best.id)) best = b;
    }
    reqs[t]->argmax = best.id;
    reqs[t]->max_logit = best.value;
  }
}

}  // namespace fgemma
