// Highway implementations of vec.h.
#include "kernels/simd_config.h"

#include <limits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/vec.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
#include "kernels/vec.h"

HWY_BEFORE_NAMESPACE();
namespace fgemma {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

float DotImpl(const float* a, const float* b, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  auto s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
  size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    s0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), s0);
    s1 = hn::MulAdd(hn::LoadU(d, a + i + N), hn::LoadU(d, b + i + N), s1);
    s2 = hn::MulAdd(hn::LoadU(d, a + i + 2 * N), hn::LoadU(d, b + i + 2 * N), s2);
    s3 = hn::MulAdd(hn::LoadU(d, a + i + 3 * N), hn::LoadU(d, b + i + 3 * N), s3);
  }
  for (; i + N <= n; i += N) s0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), s0);
  float sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void AddScaledImpl(float* y, const float* x, float s, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto vs = hn::Set(d, s);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::MulAdd(vs, hn::LoadU(d, x + i), hn::LoadU(d, y + i)), d, y + i);
  for (; i < n; ++i) y[i] += s * x[i];
}

void AddRowCombinationImpl(float* y, const float* rows, size_t stride, const float* c, size_t k, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  // Four vectors of y at a time stay in registers across the k rows (independent FMA chains).
  for (; i + 4 * N <= n; i += 4 * N) {
    auto a0 = hn::LoadU(d, y + i), a1 = hn::LoadU(d, y + i + N), a2 = hn::LoadU(d, y + i + 2 * N),
         a3 = hn::LoadU(d, y + i + 3 * N);
    for (size_t j = 0; j < k; ++j) {
      const auto cj = hn::Set(d, c[j]);
      const float* r = rows + j * stride + i;
      a0 = hn::MulAdd(cj, hn::LoadU(d, r), a0);
      a1 = hn::MulAdd(cj, hn::LoadU(d, r + N), a1);
      a2 = hn::MulAdd(cj, hn::LoadU(d, r + 2 * N), a2);
      a3 = hn::MulAdd(cj, hn::LoadU(d, r + 3 * N), a3);
    }
    hn::StoreU(a0, d, y + i);
    hn::StoreU(a1, d, y + i + N);
    hn::StoreU(a2, d, y + i + 2 * N);
    hn::StoreU(a3, d, y + i + 3 * N);
  }
  for (; i + N <= n; i += N) {
    auto a = hn::LoadU(d, y + i);
    for (size_t j = 0; j < k; ++j) a = hn::MulAdd(hn::Set(d, c[j]), hn::LoadU(d, rows + j * stride + i), a);
    hn::StoreU(a, d, y + i);
  }
  // The tail one lane at a time with the same operation (MulAdd is fused where the target has
  // FMA, a multiply then an add where it has not), so a value's bits do not depend on its place.
  const hn::CappedTag<float, 1> d1;
  for (; i < n; ++i) {
    auto a = hn::LoadU(d1, y + i);
    for (size_t j = 0; j < k; ++j) a = hn::MulAdd(hn::Set(d1, c[j]), hn::LoadU(d1, rows + j * stride + i), a);
    hn::StoreU(a, d1, y + i);
  }
}

void ScaleImpl(float* y, float s, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto vs = hn::Set(d, s);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::Mul(vs, hn::LoadU(d, y + i)), d, y + i);
  for (; i < n; ++i) y[i] *= s;
}

// A compare and select rather than Max: targets' max instructions differ on NaN (x86 returns the
// second operand), and a NaN must never hide a lane's other values.
float MaxValueImpl(const float* x, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  auto m0 = hn::Set(d, -std::numeric_limits<float>::infinity()), m1 = m0, m2 = m0, m3 = m0;
  auto fold = [&](decltype(m0) m, const float* p) {
    const auto v = hn::LoadU(d, p);
    return hn::IfThenElse(hn::Gt(v, m), v, m);
  };
  size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    m0 = fold(m0, x + i);
    m1 = fold(m1, x + i + N);
    m2 = fold(m2, x + i + 2 * N);
    m3 = fold(m3, x + i + 3 * N);
  }
  for (; i + N <= n; i += N) m0 = fold(m0, x + i);
  // The lanes fold by comparison from -inf, not by MaxOfLanes: Highway's EMU128 starts that
  // reduction from the lowest finite float (an empty or all -inf input would give -FLT_MAX).
  HWY_ALIGN float lanes[hn::MaxLanes(d)];
  hn::Store(hn::Max(hn::Max(m0, m1), hn::Max(m2, m3)), d, lanes);
  float m = -std::numeric_limits<float>::infinity();
  for (size_t k = 0; k < N; ++k) m = lanes[k] > m ? lanes[k] : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// gate[i] = 0.5 * g * (1 + tanh(u)) * up[i], u = sqrt(2/pi) * (g + 0.044715 g^3), computed as the
// equal g / (1 + exp(-2u)) * up[i]: one Highway Exp (1 ulp) and a division instead of its Tanh
// (~59 instructions per 4 lanes on NEON: 0.55M of a 270m token). Also more accurate where g is very
// negative: 1 + tanh(u) cancels there, exp(-2u) does not.
void GeluTanhMulImpl(float* gate, const float* up, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto minus_two_k0 = hn::Set(d, -2.0f * 0.7978845608028654f), k1 = hn::Set(d, 0.044715f),
             one = hn::Set(d, 1.0f), min_z = hn::Set(d, -100.0f), max_z = hn::Set(d, 88.0f);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto g = hn::LoadU(d, gate + i);
    const auto z = hn::Mul(minus_two_k0, hn::MulAdd(hn::Mul(k1, g), hn::Mul(g, g), g));  // -2u
    // z in [-100, 88]: Exp's valid range, and exp(z) finite (an infinite divisor would make ARMv7's
    // reciprocal-step division NaN); beyond 88 the result is g / 1.6e38, zero to the precision of
    // g * up. A NaN (a corrupt state) stays NaN through g, but must not reach Exp: Highway's
    // emulated targets convert it to int, which is undefined behaviour.
    const auto e = hn::Exp(d, hn::Min(hn::Max(hn::IfThenZeroElse(hn::IsNaN(z), z), min_z), max_z));
    hn::StoreU(hn::Mul(hn::Div(g, hn::Add(one, e)), hn::LoadU(d, up + i)), d, gate + i);
  }
  if (i < n) {  // tail through a padded copy so every lane runs the same math
    HWY_ALIGN float g[hn::MaxLanes(d)] = {}, u[hn::MaxLanes(d)] = {};
    for (size_t j = i; j < n; ++j) {
      g[j - i] = gate[j];
      u[j - i] = up[j];
    }
    GeluTanhMulImpl(g, u, N);
    for (size_t j = i; j < n; ++j) gate[j] = g[j - i];
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace fgemma
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace fgemma {
HWY_EXPORT(DotImpl);
HWY_EXPORT(AddScaledImpl);
HWY_EXPORT(ScaleImpl);
HWY_EXPORT(AddRowCombinationImpl);
HWY_EXPORT(GeluTanhMulImpl);
HWY_EXPORT(MaxValueImpl);

float Dot(const float* a, const float* b, size_t n) { return HWY_DYNAMIC_DISPATCH(DotImpl)(a, b, n); }
void AddScaled(float* y, const float* x, float s, size_t n) { HWY_DYNAMIC_DISPATCH(AddScaledImpl)(y, x, s, n); }
void AddRowCombination(float* y, const float* rows, size_t stride, const float* c, size_t k, size_t n) {
  HWY_DYNAMIC_DISPATCH(AddRowCombinationImpl)(y, rows, stride, c, k, n);
}
void Scale(float* y, float s, size_t n) { HWY_DYNAMIC_DISPATCH(ScaleImpl)(y, s, n); }
void GeluTanhMul(float* gate, const float* up, size_t n) { HWY_DYNAMIC_DISPATCH(GeluTanhMulImpl)(gate, up, n); }
float MaxValue(const float* x, size_t n) { return HWY_DYNAMIC_DISPATCH(MaxValueImpl)(x, n); }
}  // namespace fgemma
#endif  // HWY_ONCE
