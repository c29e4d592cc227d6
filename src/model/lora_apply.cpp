#include "model/lora_apply.h"

#include <algorithm>

#include "kernels/vec.h"

namespace fgemma {
namespace {

// Below this many multiply-adds a step runs on the calling thread: a dispatch would cost more.
constexpr size_t kInlineWork = 32 * 1024;
// Columns of y per task of step 2 (a multiple of every SIMD width).
constexpr size_t kColumnBlock = 256;

// Runs fn(i) for i in [0, count), spread over the pool in contiguous ranges when `work` is large.
template <typename Fn>
void Spread(ThreadPool& pool, size_t count, size_t work, Fn&& fn) {
  const size_t threads = static_cast<size_t>(pool.num_threads());
  if (threads == 1 || work < kInlineWork || count < 2) {
    for (size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  const size_t tasks = std::min(count, threads * 4), per = (count + tasks - 1) / tasks;
  pool.Run(tasks, [&](size_t task, int) {
    for (size_t i = task * per, end = std::min(count, i + per); i < end; ++i) fn(i);
  });
}

}  // namespace

void ApplyLora(std::initializer_list<LoraTarget> targets, const float* x, size_t n, size_t x_stride, float* u,
               ThreadPool& pool) {
  // u holds, per token, the targets' ranks one after another: [n, R].
  size_t R = 0, down_work = 0, up_work = 0, up_blocks = 0;
  for (const LoraTarget& t : targets) {
    if (t.p == nullptr || t.p->empty()) continue;
    R += t.p->rank;
    down_work += t.p->rank * t.p->in;
    up_work += t.p->rank * t.p->out;
    up_blocks += (t.p->out + kColumnBlock - 1) / kColumnBlock;
  }
  if (R == 0 || n == 0) return;

  // Step 1: u[t, k] = dot(A[k, :], x_t), one item per (token, rank row of all targets).
  Spread(pool, n * R, n * down_work, [&](size_t item) {
    const size_t t = item / R;
    size_t k = item % R;
    for (const LoraTarget& tg : targets) {
      if (tg.p == nullptr || tg.p->empty()) continue;
      if (k < tg.p->rank) {
        u[item] = Dot(tg.p->a.data() + k * tg.p->in, x + t * x_stride, tg.p->in);
        return;
      }
      k -= tg.p->rank;
    }
  });

  // Step 2: y_t[o] += sum_k u[t, k] b'[k, o], one item per block of output columns of a target
  // (all tokens), adding the rank's rows in order k = 0, 1, ...
  Spread(pool, up_blocks, n * up_work, [&](size_t item) {
    size_t u_offset = 0;
    for (const LoraTarget& tg : targets) {
      if (tg.p == nullptr || tg.p->empty()) continue;
      const LoraProjection& p = *tg.p;
      const size_t blocks = (p.out + kColumnBlock - 1) / kColumnBlock;
      if (item < blocks) {
        const size_t o0 = item * kColumnBlock, len = std::min(kColumnBlock, p.out - o0);
        for (size_t t = 0; t < n; ++t) {
          const float* ut = u + t * R + u_offset;
          float* y = tg.y + t * tg.y_stride + o0;
          for (size_t k = 0; k < p.rank; ++k) AddScaled(y, p.b.data() + k * p.out + o0, ut[k], len);
        }
        return;
      }
      item -= blocks;
      u_offset += p.rank;
    }
  });
}

}  // namespace fgemma
