// Scalar references of ops.h (the code other architectures than Arm run) and the RoPE tables.
#include "kernels/ops.h"

#include <cmath>

namespace fgemma {

void RmsNormReference(const float* x, const float* scale, float eps, size_t n, float* out) {
  // Accumulate in double: n is small (<= 2048) and this keeps us closest to the reference's
  // float32 mean, whose own rounding is below 1e-7 relative.
  double ss = 0;
  for (size_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float mean = static_cast<float>(ss / static_cast<double>(n));
  const float inv = 1.0f / std::sqrt(mean + eps);
  for (size_t i = 0; i < n; ++i) out[i] = (x[i] * inv) * scale[i];
}

void RmsNormRowsReference(const float* x, size_t x_stride, const float* scale, float eps, size_t n, size_t rows,
                          float* out, size_t out_stride) {
  // RmsNormReference's operations for each row, four rows' sums interleaved.
  constexpr size_t kLanes = 4;
  size_t r = 0;
  for (; r + kLanes <= rows; r += kLanes) {
    double ss[kLanes] = {};
    for (size_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < kLanes; ++k) {
        const float v = x[(r + k) * x_stride + i];
        ss[k] += static_cast<double>(v) * v;
      }
    }
    for (size_t k = 0; k < kLanes; ++k) {
      const float inv = 1.0f / std::sqrt(static_cast<float>(ss[k] / static_cast<double>(n)) + eps);
      const float* xr = x + (r + k) * x_stride;
      float* o = out + (r + k) * out_stride;
      for (size_t i = 0; i < n; ++i) o[i] = (xr[i] * inv) * scale[i];
    }
  }
  for (; r < rows; ++r) RmsNormReference(x + r * x_stride, scale, eps, n, out + r * out_stride);
}

void GeluTanhMulReference(float* gate, const float* up, size_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  for (size_t i = 0; i < n; ++i) {
    const float x = gate[i];
    const float inner = kSqrt2OverPi * (x + 0.044715f * x * x * x);
    gate[i] = 0.5f * x * (1.0f + std::tanh(inner)) * up[i];
  }
}

void ApplyRopeReference(float* x, const float* cos, const float* sin, size_t dim) {
  const size_t half = dim / 2;
  for (size_t i = 0; i < half; ++i) {
    const float a = x[i];
    const float b = x[i + half];
    x[i] = a * cos[i] - b * sin[i];
    x[i + half] = a * sin[i] + b * cos[i];
  }
}

void RopeAngles(const float* inv_freq, size_t half, int position, float* cos, float* sin) {
  const float p = static_cast<float>(position);
  for (size_t i = 0; i < half; ++i) {
    const float angle = p * inv_freq[i];
    cos[i] = static_cast<float>(std::cos(static_cast<double>(angle)));
    sin[i] = static_cast<float>(std::sin(static_cast<double>(angle)));
  }
}

void RopeInverseFrequencies(float theta, float scaling, size_t dim, float* inv_freq) {
  for (size_t i = 0; i < dim / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
    const float p = static_cast<float>(std::pow(static_cast<double>(theta), static_cast<double>(exponent)));
    inv_freq[i] = (1.0f / p) / scaling;
  }
}

void SoftmaxReference(float* x, size_t n) {
  if (n == 0) return;
  float m = x[0];
  for (size_t i = 1; i < n; ++i) m = x[i] > m ? x[i] : m;
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (size_t i = 0; i < n; ++i) x[i] *= inv;
}

void AddInPlaceReference(float* y, const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace fgemma
