// The run-time LoRA update of the forward pass: y += B'(A x) for projections that read the same
// input (q/k/v; gate/up) or one at a time (o, down), over a batch of tokens, with no allocation.
//
// Two steps, each one pool dispatch (inline when the work is too small to share):
//   1. u[t, k] = dot(A[k, :], x_t)              the "down" projection to the rank, all targets
//   2. y_t[o] += sum_k u[t, k] * b'[k, o]        the "up" projection, added to the base output
// Every output is computed in the same order whatever the batch size or the split over threads,
// so a batch gives the bits of the same tokens one at a time.
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
