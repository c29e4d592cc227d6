// The run-time LoRA update of the forward pass: y += B'(A x) for projections that read the same
// input (q/k/v; gate/up) or one at a time (o, down), over a batch of tokens, with no allocation.
//
// Two pool dispatches:
//   1. u[n, R] = x A^T       the "down" projections to the ranks, all targets at once (the float32
//                            matrix kernels, register-tiled over tokens in prefill)
//   2. y_t += u_t B'^T       by row blocks of every target's output: each y value takes its r
//                            fused multiply-adds in rank order (kernels/vec.h AddRowCombination),
//                            the same whatever the batch or the split
#pragma once

#include <cstddef>
#include <initializer_list>

#include "model/lora_adapter.h"
#include "util/thread_pool.h"

namespace fgemma {

struct LoraTarget {
  const LoraProjection* p;  // null or empty: skipped
  float* y;                 // [n, y_stride], the base projection's output
  size_t y_stride;
};

// Adds the updates of `targets` (all reading x[n, x_stride]) to their outputs. `u` is scratch of
// n * (sum of the targets' ranks) floats.
void ApplyLora(std::initializer_list<LoraTarget> targets, const float* x, size_t n, size_t x_stride, float* u,
               ThreadPool& pool);

}  // namespace fgemma
