// The run-time LoRA update of the forward pass: y += B'(A x) for projections that read the same
// input (q/k/v; gate/up) or one at a time (o, down), over a batch of tokens, with no allocation.
//
// Two pool dispatches, both on the float32 matrix kernels (register-tiled over tokens in prefill):
//   1. u[n, R] = x A^T        the "down" projections to the ranks, all targets at once
//   2. d = u_j B'_j^T, y += d  per target j, each task adding the output columns it computed
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

// Scratch of the update, sized by the adapter (ForwardBuffers holds it).
struct LoraScratch {
  float* u;      // n * (sum of the targets' ranks) floats
  float* delta;  // n * (sum of the targets' output rows) floats
};

// Adds the updates of `targets` (all reading x[n, x_stride]) to their outputs.
void ApplyLora(std::initializer_list<LoraTarget> targets, const float* x, size_t n, size_t x_stride,
               const LoraScratch& scratch, ThreadPool& pool);

}  // namespace fgemma
