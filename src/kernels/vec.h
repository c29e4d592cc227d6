// Vector helpers for attention (TEMPORARY scalar versions; SIMD versions land with the kernels).
#pragma once

#include <cstddef>

namespace fgemma {

float Dot(const float* a, const float* b, size_t n);
// y[i] += a * x[i]
void AddScaled(float* y, const float* x, float a, size_t n);

}  // namespace fgemma
