#include "runtime/lm_head.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/matmul.h"
#include "kernels/vec.h"

namespace fgemma {
namespace {
constexpr size_t kBlockRows = 2048;  // 2048 x 640 bf16 = 2.6 MB of weights per task

inline bool Better(float v, int32_t id, float best_v, int32_t best_id) {
  return v > best_v || (v == best_v && id < best_id);
}
}  // namespace

LmHead::LmHead(const Model& model, int num_threads)
    : model_(model),
      block_scratch_(static_cast<size_t>(num_threads) * kBlockRows),
      packed_(PackedActivationBytes(model.embedding().dtype, model.embedding().cols, 1)),
      best_(static_cast<size_t>(num_threads)),
      many_hidden_(kMaxMany * model.embedding().cols),
      many_packed_(PackedActivationBytes(model.embedding().dtype, model.embedding().cols, kMaxMany)),
      many_scratch_(static_cast<size_t>(num_threads) * kMaxMany * kBlockRows),
      many_best_(static_cast<size_t>(num_threads) * kMaxMany) {}

void LmHead::Compute(const float* hidden, HeadRequest& req, ThreadPool& pool) {
  const KernelMatrix& E = model_.embedding();
  const float cap = model_.config().final_logit_softcap;
  Activations a;
  a.data = hidden;
  a.stride = E.cols;
  a.num_tokens = 1;
  if (!packed_.empty()) PackActivations(E.dtype, E.cols, &a, packed_.data());
  for (auto& b : best_) b = {-std::numeric_limits<float>::infinity(), std::numeric_limits<int32_t>::max()};

  const uint64_t* mask = req.allowed_mask;
  auto finish = [&](float* logits, size_t count, size_t id_base, const int32_t* ids, int thread) {
    Best& best = best_[static_cast<size_t>(thread)];
    // Without a softcap (which rewrites the logits) a block whose largest logit is below the best so
    // far changes nothing: one vector pass instead of a compare, mask test and branch per logit (a
    // decode step's head is 262144 logits). A tie or a NaN takes the exact scan below.
    if (cap <= 0 && MaxValue(logits, count) < best.value) return;
    for (size_t i = 0; i < count; ++i) {
      float v = logits[i];
      if (cap > 0) logits[i] = v = cap * std::tanh(v / cap);
      const int32_t id = ids ? ids[i] : static_cast<int32_t>(id_base + i);
      if (mask && !(mask[static_cast<uint32_t>(id) >> 6] >> (id & 63) & 1)) continue;
      if (Better(v, id, best.value, best.id)) best = {v, id};
    }
  };

  if (req.candidates.empty()) {
    const size_t tasks = (E.rows + kBlockRows - 1) / kBlockRows;
    pool.Run(tasks, [&](size_t task, int thread) {
      const size_t r0 = task * kBlockRows, r1 = std::min(E.rows, r0 + kBlockRows);
      // Write straight into the caller's logits when given; else into this thread's scratch.
      float* out = req.logits ? req.logits + r0 : block_scratch_.data() + static_cast<size_t>(thread) * kBlockRows;
      MatMul(RowSlice(E, r0, r1), a, out, 0, 0, r1 - r0);
      finish(out, r1 - r0, r0, nullptr, thread);
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
      finish(out, i1 - i0, 0, req.candidates.data() + i0, thread);
    });
  }
  Best best = best_[0];
  for (const Best& b : best_) {
    if (Better(b.value, b.id, best.value, best.id)) best = b;
  }
  req.argmax = best.id;
  req.max_logit = best.value;
}

void LmHead::ComputeMany(std::span<const float* const> hidden, std::span<HeadRequest* const> requests,
                         ThreadPool& pool) {
  const KernelMatrix& E = model_.embedding();
  const float cap = model_.config().final_logit_softcap;
  const size_t m = requests.size(), H = E.cols;
  for (size_t i = 0; i < m; ++i) std::copy_n(hidden[i], H, many_hidden_.data() + i * H);
  Activations a;
  a.data = many_hidden_.data();
  a.stride = H;
  a.num_tokens = m;
  if (!many_packed_.empty()) PackActivations(E.dtype, H, &a, many_packed_.data());
  const size_t threads = best_.size();
  for (auto& b : many_best_) b = {-std::numeric_limits<float>::infinity(), std::numeric_limits<int32_t>::max()};
  const size_t tasks = (E.rows + kBlockRows - 1) / kBlockRows;
  pool.Run(tasks, [&](size_t task, int thread) {
    const size_t r0 = task * kBlockRows, r1 = std::min(E.rows, r0 + kBlockRows);
    float* out = many_scratch_.data() + static_cast<size_t>(thread) * kMaxMany * kBlockRows;
    MatMul(RowSlice(E, r0, r1), a, out, kBlockRows, 0, r1 - r0);
    for (size_t t = 0; t < m; ++t) {
      HeadRequest& req = *requests[t];
      float* logits = out + t * kBlockRows;
      Best& best = many_best_[static_cast<size_t>(thread) * kMaxMany + t];
      const uint64_t* mask = req.allowed_mask;
      if (req.logits && cap <= 0) std::copy_n(logits, r1 - r0, req.logits + r0);
      // As in Compute: without a softcap, a block whose largest logit is below this position's best
      // so far changes nothing: one vector pass instead of a compare, mask test and branch per logit.
      if (cap <= 0 && MaxValue(logits, r1 - r0) < best.value) continue;
      for (size_t i = 0; i < r1 - r0; ++i) {
        float v = logits[i];
        if (cap > 0) logits[i] = v = cap * std::tanh(v / cap);
        const int32_t id = static_cast<int32_t>(r0 + i);
        if (mask && !(mask[static_cast<uint32_t>(id) >> 6] >> (id & 63) & 1)) continue;
        if (Better(v, id, best.value, best.id)) best = {v, id};
      }
      if (req.logits && cap > 0) std::copy_n(logits, r1 - r0, req.logits + r0);  // the capped values
    }
  });
  for (size_t t = 0; t < m; ++t) {
    Best best = many_best_[t];
    for (size_t th = 1; th < threads; ++th) {
      const Best& b = many_best_[th * kMaxMany + t];
      if (Better(b.value, b.id, best.value, best.id)) best = b;
    }
    requests[t]->argmax = best.id;
    requests[t]->max_logit = best.value;
  }
}

}  // namespace fgemma
