// ops.h's RmsNorm, ApplyRope, Softmax and AddInPlace: Highway vector code on Arm (the static NEON
// target of the aarch64 and armhf builds, or the scalar fallback without NEON), the scalar
// references of ops.cpp elsewhere (see ops.h: x86 keeps the bits of the code it ran before),
// except Softmax, vector code on every target (its exp dominated x86's attention rows).
//
// Per token on the 270m these are 4 RMSNorms of 640 values and 5 head norms of 256 per layer, RoPE
// on 5 heads, a softmax per query head over the visible keys and 2 residual adds: scalar on armhf
// (VFP, the norms' sums in double) they cost about as much as attention's vector products.
#include "kernels/simd_config.h"

#include <cmath>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/ops_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace fgemma {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_ARCH_ARM

// sum of x[i]^2 in float32: four vector accumulators over whole groups of 4 vectors, then whole
// vectors into the first, the lanes added, and the tail one value at a time. The order depends
// only on n (indices, never alignment).
HWY_INLINE float SumOfSquares(const float* x, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  auto s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
  size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    const auto v0 = hn::LoadU(d, x + i), v1 = hn::LoadU(d, x + i + N), v2 = hn::LoadU(d, x + i + 2 * N),
               v3 = hn::LoadU(d, x + i + 3 * N);
    s0 = hn::MulAdd(v0, v0, s0);
    s1 = hn::MulAdd(v1, v1, s1);
    s2 = hn::MulAdd(v2, v2, s2);
    s3 = hn::MulAdd(v3, v3, s3);
  }
  for (; i + N <= n; i += N) {
    const auto v = hn::LoadU(d, x + i);
    s0 = hn::MulAdd(v, v, s0);
  }
  float sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
  for (; i < n; ++i) sum += x[i] * x[i];
  return sum;
}

void RmsNormImpl(const float* x, const float* scale, float eps, size_t n, float* out) {
  if (n == 0) return;
  const float mean = SumOfSquares(x, n) / static_cast<float>(n);
  const float inv = 1.0f / std::sqrt(mean + eps);
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto vinv = hn::Set(d, inv);
  size_t i = 0;
  // (x * inv) * scale as the reference: two roundings, the same in every lane and in the tail.
  for (; i + N <= n; i += N) hn::StoreU(hn::Mul(hn::Mul(hn::LoadU(d, x + i), vinv), hn::LoadU(d, scale + i)), d, out + i);
  for (; i < n; ++i) out[i] = (x[i] * inv) * scale[i];
}

void ApplyRopeImpl(float* x, const float* cos, const float* sin, size_t dim) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const size_t half = dim / 2;
  float* y = x + half;
  size_t i = 0;
  for (; i + N <= half; i += N) {
    const auto a = hn::LoadU(d, x + i), b = hn::LoadU(d, y + i), c = hn::LoadU(d, cos + i), s = hn::LoadU(d, sin + i);
    hn::StoreU(hn::Sub(hn::Mul(a, c), hn::Mul(b, s)), d, x + i);
    hn::StoreU(hn::Add(hn::Mul(a, s), hn::Mul(b, c)), d, y + i);
  }
  for (; i < half; ++i) {
    const float a = x[i], b = y[i];
    x[i] = a * cos[i] - b * sin[i];
    y[i] = a * sin[i] + b * cos[i];
  }
}

void AddInPlaceImpl(float* y, const float* x, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::Add(hn::LoadU(d, y + i), hn::LoadU(d, x + i)), d, y + i);
  for (; i < n; ++i) y[i] += x[i];
}

void RmsNormRowsImpl(const float* x, size_t x_stride, const float* scale, float eps, size_t n, size_t rows,
                     float* out, size_t out_stride) {
  for (size_t r = 0; r < rows; ++r) RmsNormImpl(x + r * x_stride, scale, eps, n, out + r * out_stride);
}

#else  // not Arm: the scalar references (ops.h)

void RmsNormImpl(const float* x, const float* scale, float eps, size_t n, float* out) {
  RmsNormReference(x, scale, eps, n, out);
}
void RmsNormRowsImpl(const float* x, size_t x_stride, const float* scale, float eps, size_t n, size_t rows,
                     float* out, size_t out_stride) {
  RmsNormRowsReference(x, x_stride, scale, eps, n, rows, out, out_stride);
}
void ApplyRopeImpl(float* x, const float* cos, const float* sin, size_t dim) { ApplyRopeReference(x, cos, sin, dim); }
void AddInPlaceImpl(float* y, const float* x, size_t n) { AddInPlaceReference(y, x, n); }

#endif  // HWY_ARCH_ARM

// Softmax: vector code on every target (ops.h says why).
// x[i] = exp(x[i] - m) for whole vectors, returning their float32 sum in lanes. A NaN stays NaN
// but never reaches Exp (the emulated targets convert its input to int: undefined behaviour).
template <class D>
HWY_INLINE hn::Vec<D> ExpShifted(D d, float* x, hn::Vec<D> vm, hn::Vec<D> sum) {
  const auto v = hn::Sub(hn::LoadU(d, x), vm);
  const auto nan = hn::IsNaN(v);
  const auto e = hn::IfThenElse(nan, v, hn::Exp(d, hn::IfThenZeroElse(nan, v)));
  hn::StoreU(e, d, x);
  return hn::Add(sum, e);
}

void SoftmaxImpl(float* x, size_t n) {
  if (n == 0) return;
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  // The largest value (exact in any order; a NaN in the row makes every output NaN either way).
  float m = x[0];
  size_t i = 0;
  if (n >= N) {
    auto vmax = hn::LoadU(d, x);
    for (i = N; i + N <= n; i += N) vmax = hn::Max(vmax, hn::LoadU(d, x + i));
    m = hn::GetLane(hn::MaxOfLanes(d, vmax));
  }
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  const auto vm = hn::Set(d, m);
  auto s0 = hn::Zero(d), s1 = hn::Zero(d);
  i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    s0 = ExpShifted(d, x + i, vm, s0);
    s1 = ExpShifted(d, x + i + N, vm, s1);
  }
  for (; i + N <= n; i += N) s0 = ExpShifted(d, x + i, vm, s0);
  float sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
  if (i < n) {  // the tail through a padded copy, so every value runs the same exp
    HWY_ALIGN float t[hn::MaxLanes(d)];
    for (size_t j = 0; j < N; ++j) t[j] = i + j < n ? x[i + j] : m;
    ExpShifted(d, t, vm, hn::Zero(d));
    for (size_t j = i; j < n; ++j) {
      x[j] = t[j - i];
      sum += x[j];
    }
  }
  const auto vinv = hn::Set(d, 1.0f / sum);
  i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::Mul(hn::LoadU(d, x + i), vinv), d, x + i);
  for (; i < n; ++i) x[i] *= hn::GetLane(vinv);
}

}  // namespace HWY_NAMESPACE
}  // namespace fgemma
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace fgemma {
HWY_EXPORT(RmsNormImpl);
HWY_EXPORT(RmsNormRowsImpl);
HWY_EXPORT(ApplyRopeImpl);
HWY_EXPORT(AddInPlaceImpl);
HWY_EXPORT(SoftmaxImpl);

void RmsNorm(const float* x, const float* scale, float eps, size_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(RmsNormImpl)(x, scale, eps, n, out);
}
void RmsNormRows(const float* x, size_t x_stride, const float* scale, float eps, size_t n, size_t rows, float* out,
                 size_t out_stride) {
  HWY_DYNAMIC_DISPATCH(RmsNormRowsImpl)(x, x_stride, scale, eps, n, rows, out, out_stride);
}
void ApplyRope(float* x, const float* cos, const float* sin, size_t dim) {
  HWY_DYNAMIC_DISPATCH(ApplyRopeImpl)(x, cos, sin, dim);
}
void AddInPlace(float* y, const float* x, size_t n) { HWY_DYNAMIC_DISPATCH(AddInPlaceImpl)(y, x, n); }
void Softmax(float* x, size_t n) { HWY_DYNAMIC_DISPATCH(SoftmaxImpl)(x, n); }
}  // namespace fgemma
#endif  // HWY_ONCE
