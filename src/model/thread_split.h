// How the forward pass spreads its work over the thread pool: the one place that decides splits.
//
// Per-token steps (norms, RoPE, activation packing) and per-row matrix outputs are independent of
// the split, but the row blocks of a matrix product (and with them the order some kernels reduce
// in) follow the pool's thread count. So the bits of every result depend on the thread count and
// on nothing else (not on which pool, nor on other sessions sharing it); catalog cache files
// record the count for that reason.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "kernels/matmul.h"
#include "util/tensor.h"
#include "util/thread_pool.h"

namespace fgemma {

// Calls fn(t0, t1) on ranges that cover [0, n): spread over the pool for a batch, inline for a few
// tokens (decode), where a dispatch would cost more than the work.
template <typename Fn>
void ForTokens(ThreadPool& pool, size_t n, Fn&& fn) {
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

// One weight of a parallel matrix product: y[n, y_stride] gets x W^T in its first w->rows columns.
struct Projection {
  const KernelMatrix* w;
  float* y;
  size_t y_stride;
};

// y = x W^T for one or more weights that read the same input x[n, x_stride] (q/k/v; gate/up): the
// input is packed once into `packed` (for integer kernels; sized by PackedActivationBytes) and
// the rows of all weights are split across the pool in one dispatch.
void MatMulParallel(std::initializer_list<Projection> projections, const float* x, size_t n, size_t x_stride,
                    uint8_t* packed, ThreadPool& pool);

// Rows per task of a matrix product with `total_rows` output rows (all its weights together).
size_t MatMulRowBlock(size_t total_rows, int threads);

// Attention tasks: one block of rows (positions of one sequence) and a run of `heads_per_task`
// query heads sharing a KV head, so there are `tasks_per_kv` tasks per row block and KV head.
struct AttentionSplit {
  size_t heads_per_task;
  size_t tasks_per_kv;
};
AttentionSplit SplitAttention(size_t blocks, size_t kv_heads, size_t group, int threads);

}  // namespace fgemma
