#include "model/thread_split.h"

#include "kernels/attention.h"
#include "kernels/matmul.h"

namespace fgemma {

size_t MatMulRowBlock(size_t total_rows, int num_threads) {
  // ~4 slices per thread balance uneven progress; 16-row multiples suit every kernel's tiling.
  const size_t threads = static_cast<size_t>(num_threads);
  size_t block = (total_rows + threads * 4 - 1) / (threads * 4);
  return std::max<size_t>(16, (block + 15) / 16 * 16);
}

void MatMulParallel(std::initializer_list<Projection> projections, const float* x, size_t n, size_t x_stride,
                    uint8_t* packed, ThreadPool& pool) {
  const KernelMatrix& first = *projections.begin()->w;
  bool same_input_format = true;
  size_t total_rows = 0;
  for (const Projection& p : projections) {
    same_input_format &= p.w->dtype == first.dtype && p.w->cols == first.cols;
    total_rows += p.w->rows;
  }
  if (!same_input_format) {  // mixed weight types (some GGUF files): one dispatch each
    for (const Projection& p : projections) MatMulParallel({p}, x, n, x_stride, packed, pool);
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
      PackActivations(first.dtype, first.cols, &part, packed + t0 * record);
    });
    a.packed = packed;
    a.packed_stride = record;
  }
  const size_t block = MatMulRowBlock(total_rows, pool.num_threads());
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

AttentionSplit SplitAttention(size_t blocks, size_t kv_heads, size_t group, int num_threads) {
  // The whole group per task (each key and value row read once for all of its heads) unless that
  // leaves threads idle (decode): then halve it while the group divides evenly.
  const size_t threads = static_cast<size_t>(num_threads);
  size_t split = 1;
  while (split < group && blocks * kv_heads * split < threads && group % (split * 2) == 0) split *= 2;
  size_t heads_per_task = group / split;  // the largest divisor of the group that the kernel takes
  while (heads_per_task > kMaxAttentionGroup || group % heads_per_task != 0) --heads_per_task;
  return {heads_per_task, group / heads_per_task};
}

}  // namespace fgemma
