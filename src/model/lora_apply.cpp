#include "model/lora_apply.h"

#include <algorithm>
#include <array>

#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "model/thread_split.h"

namespace fgemma {

void ApplyLora(std::initializer_list<LoraTarget> targets, const float* x, size_t n, size_t x_stride,
               const LoraScratch& scratch, ThreadPool& pool) {
  // The adapted targets (at most three: q/k/v), with where each one's u columns and delta block lie.
  struct Part {
    const LoraProjection* p;
    float* y;
    size_t y_stride;
    size_t u_offset;      // first column of u
    float* delta;         // [n, p->out]
  };
  std::array<Part, 3> parts;
  size_t count = 0, R = 0, delta_used = 0;
  for (const LoraTarget& t : targets) {
    if (t.p == nullptr || t.p->empty()) continue;
    parts[count++] = {t.p, t.y, t.y_stride, R, scratch.delta + delta_used};
    R += t.p->rank;
    delta_used += n * t.p->out;
  }
  if (count == 0 || n == 0) return;

  // Step 1: u[t, offset_j + k] = dot(A_j[k, :], x_t) for every target j, in one dispatch of
  // (target, run of tokens) tasks: A has only r rows, so prefill splits the tokens instead.
  const size_t threads = static_cast<size_t>(pool.num_threads());
  const size_t per = n < 8 ? n : (n + threads - 1) / threads, chunks = (n + per - 1) / per;
  pool.Run(count * chunks, [&](size_t task, int) {
    const Part& part = parts[task / chunks];
    const size_t t0 = (task % chunks) * per, t1 = std::min(n, t0 + per);
    const Activations ax{x + t0 * x_stride, x_stride, t1 - t0, nullptr, 0};
    MatMul(part.p->a_matrix, ax, scratch.u + t0 * R + part.u_offset, R, 0, part.p->rank);
  });

  // Step 2: delta_j = u_j B'_j^T, then y_j += delta_j, by row blocks of every target's output
  // (a task adds exactly the columns it computed, so tasks never touch the same values).
  size_t total_rows = 0;
  for (size_t j = 0; j < count; ++j) total_rows += parts[j].p->out;
  const size_t block = MatMulRowBlock(total_rows, pool.num_threads());
  size_t tasks = 0;
  for (size_t j = 0; j < count; ++j) tasks += (parts[j].p->out + block - 1) / block;
  pool.Run(tasks, [&](size_t task, int) {
    for (size_t j = 0; j < count; ++j) {
      const Part& part = parts[j];
      const size_t out = part.p->out, slices = (out + block - 1) / block;
      if (task >= slices) {
        task -= slices;
        continue;
      }
      const size_t r0 = task * block, r1 = std::min(out, r0 + block);
      const Activations au{scratch.u + part.u_offset, R, n, nullptr, 0};
      MatMul(part.p->b_matrix, au, part.delta, out, r0, r1);
      for (size_t t = 0; t < n; ++t) AddInPlace(part.y + t * part.y_stride + r0, part.delta + t * out + r0, r1 - r0);
      return;
    }
  });
}

}  // namespace fgemma
