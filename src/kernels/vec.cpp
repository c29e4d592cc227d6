#include "kernels/vec.h"

namespace fgemma {

float Dot(const float* a, const float* b, size_t n) {
  float acc[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  }
  float s = 0;
  for (; i < n; ++i) s += a[i] * b[i];
  return s + ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

void AddScaled(float* y, const float* x, float a, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

}  // namespace fgemma
