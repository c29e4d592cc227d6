#include "model/lora_apply.h"

#include <algorithm>
#include <array>

#include "kernels/matmul.h"
#include "kernels/vec.h"
#include "model/thread_split.h"

namespace fgemma {
namespace {

// Below this many multiply-adds (a decode step's update of a group is ~10^5 for the 270m at
// r = 16) both steps run on the calling thread: a pool dispatch costs more than the work.
constexpr size_t kInlineWork = size_t{1} << 18;

}  // namespace

void ApplyLora(std::initializer_list<LoraTarget> targets, const float* x, size_t n, size_t x_stride, float* u,
               ThreadPool& pool) {
  // The adapted targets (at most three: q/k/v), with the first column of u each one fills.
  struct Part {
    const LoraProjection* p;
    float* y;
    size_t y_stride;
    size_t u_offset;
  };
  std::array<Part, 3> parts;
  size_t count = 0, R = 0, work = 0;
  for (const LoraTarget& t : targets) {
    if (t.p == nullptr || t.p->empty()) continue;
    parts[count++] = {t.p, t.y, t.y_stride, R};
    R += t.p->rank;
    work += n * t.p->rank * (t.p->in + t.p->out);
  }
  if (count == 0 || n == 0) return;
  // Each step's tasks compute the same values wherever they run.
  const bool spread = work >= kInlineWork && pool.num_threads() > 1;
  auto run = [&](size_t tasks, const auto& fn) {
    if (spread) {
      pool.Run(tasks, fn);
    } else {
      for (size_t task = 0; task < tasks; ++task) fn(task, 0);
    }
  };

  // Step 1: u[t, offset_j + k] = dot(A_j[k, :], x_t) for every target j, in one dispatch of
  // (target, run of tokens) tasks: A has only r rows, so prefill splits the tokens instead.
  const size_t threads = static_cast<size_t>(pool.num_threads());
  const size_t per = n < 8 ? n : (n + threads - 1) / threads, chunks = (n + per - 1) / per;
  run(count * chunks, [&](size_t task, int) {
    const Part& part = parts[task / chunks];
    const size_t t0 = (task % chunks) * per, t1 = std::min(n, t0 + per);
    const Activations ax{x + t0 * x_stride, x_stride, t1 - t0, nullptr, 0};
    MatMul(part.p->a_matrix, ax, u + t0 * R + part.u_offset, R, 0, part.p->rank);
  });

  // Step 2: y_t[o] += sum_k u[t, k] bt[k, o], by row blocks of every target's output.
  size_t total_rows = 0;
  for (size_t j = 0; j < count; ++j) total_rows += parts[j].p->out;
  const size_t block = MatMulRowBlock(total_rows, pool.num_threads());
  size_t tasks = 0;
  for (size_t j = 0; j < count; ++j) tasks += (parts[j].p->out + block - 1) / block;
  run(tasks, [&](size_t task, int) {
    for (size_t j = 0; j < count; ++j) {
      const Part& part = parts[j];
      const size_t out = part.p->out, slices = (out + block - 1) / block;
      if (task >= slices) {
        task -= slices;
        continue;
      }
      const size_t r0 = task * block, r1 = std::min(out, r0 + block);
      for (size_t t = 0; t < n; ++t) {
        AddRowCombination(part.y + t * part.y_stride + r0, part.p->bt.data() + r0, out, u + t * R + part.u_offset,
                          part.p->rank, r1 - r0);
      }
      return;
    }
  });
}

}  // namespace fgemma
