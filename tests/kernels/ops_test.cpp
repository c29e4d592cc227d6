// ops.h's RmsNorm, ApplyRope, Softmax and AddInPlace on every SIMD target against their scalar
// references, across sizes, tails and misalignment. On Arm they are Highway vector code (float32
// row sums, Highway's exp), and Softmax is on every target; elsewhere the references themselves.
// Whatever the target, an output depends only on its row's values and length: the same row at
// every alignment gives the same bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/ops.h"

namespace fgemma {
namespace {

class OpsTest : public test::TargetTest {};

using test::RandomNormal;

const size_t kSizes[] = {1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 100, 128, 256, 640, 1000, 2048};
constexpr double kUlp = 1.0 / (1 << 24);

// Bit patterns of a float range (EXPECT_EQ on floats would pass 0.0 == -0.0 and fail NaN == NaN).
std::vector<uint32_t> Bits(const float* x, size_t n) {
  std::vector<uint32_t> b(n);
  std::memcpy(b.data(), x, n * sizeof(float));
  return b;
}

TEST_P(OpsTest, RmsNorm) {
  std::mt19937 rng(11);
  for (size_t n : kSizes) {
    const std::vector<float> x0 = RandomNormal(n, rng), w = RandomNormal(n, rng);
    std::vector<float> want(n);
    RmsNormReference(x0.data(), w.data(), 1e-6f, n, want.data());
    std::vector<uint32_t> first;
    for (size_t offset = 0; offset < 4; ++offset) {
      // Misaligned input, scale and output; then in place.
      std::vector<float> x(n + offset + 1, 7.0f), scale(n + offset, 0.0f), out(n + offset + 2, 5.0f);
      std::copy(x0.begin(), x0.end(), x.begin() + offset);
      std::copy(w.begin(), w.end(), scale.begin() + offset);
      RmsNorm(x.data() + offset, scale.data() + offset, 1e-6f, n, out.data() + offset + 1);
      EXPECT_EQ(out[offset], 5.0f) << "wrote before, n=" << n;
      EXPECT_EQ(out[offset + n + 1], 5.0f) << "wrote after, n=" << n;
      const float* got = out.data() + offset + 1;
      // float32 lanes against a double sum: the mean within (n/16 + 4) roundings, then 3 more.
      for (size_t i = 0; i < n; ++i)
        EXPECT_NEAR(got[i], want[i], (n / 8.0 + 8) * kUlp * std::fabs(want[i]) + 1e-30) << "n=" << n << " i=" << i;
      if (offset == 0) first = Bits(got, n);
      EXPECT_EQ(Bits(got, n), first) << "bits depend on alignment, n=" << n << " offset=" << offset;
      RmsNorm(x.data() + offset, scale.data() + offset, 1e-6f, n, x.data() + offset);  // in place
      EXPECT_EQ(Bits(x.data() + offset, n), first) << "in place, n=" << n;
    }
  }
}

// Rows normed together (the forward pass's batches and a token's heads) keep each row's bits
// alone, for every row count around the reference's groups of four, with strides wider than a
// row, and in place.
TEST_P(OpsTest, RmsNormRowsEqualsEachRowAlone) {
  std::mt19937 rng(21);
  for (size_t n : {1, 7, 32, 256, 640}) {
    for (size_t rows : {1, 3, 4, 5, 8, 9}) {
      const size_t stride = n + 3;
      const std::vector<float> x = RandomNormal(rows * stride, rng), w = RandomNormal(n, rng);
      std::vector<float> want(rows * stride, 5.0f), got(rows * stride + 1, 5.0f);
      for (size_t r = 0; r < rows; ++r) RmsNorm(x.data() + r * stride, w.data(), 1e-6f, n, want.data() + r * stride);
      RmsNormRows(x.data(), stride, w.data(), 1e-6f, n, rows, got.data() + 1, stride);
      EXPECT_EQ(got[0], 5.0f) << "wrote before, n=" << n << " rows=" << rows;
      EXPECT_EQ(Bits(got.data() + 1, rows * stride), Bits(want.data(), rows * stride)) << "n=" << n << " rows=" << rows;
      std::vector<float> in_place = x;
      RmsNormRows(in_place.data(), stride, w.data(), 1e-6f, n, rows, in_place.data(), stride);
      for (size_t r = 0; r < rows; ++r)
        EXPECT_EQ(Bits(in_place.data() + r * stride, n), Bits(want.data() + r * stride, n)) << "in place, row " << r;
    }
  }
}

TEST_P(OpsTest, ApplyRope) {
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> angle(-3.2f, 3.2f);
  for (size_t dim : std::initializer_list<size_t>{2, 4, 6, 8, 10, 16, 30, 32, 34, 64, 128, 256, 512}) {
    const size_t half = dim / 2;
    const std::vector<float> x0 = RandomNormal(dim, rng);
    std::vector<float> c(half), s(half);
    for (size_t i = 0; i < half; ++i) {
      const float a = angle(rng);
      c[i] = std::cos(a);
      s[i] = std::sin(a);
    }
    std::vector<float> want = x0;
    ApplyRopeReference(want.data(), c.data(), s.data(), dim);
    std::vector<uint32_t> first;
    for (size_t offset = 0; offset < 4; ++offset) {
      std::vector<float> x(dim + offset + 1, 9.0f), cs(half + offset), sn(half + offset);
      std::copy(x0.begin(), x0.end(), x.begin() + offset);
      std::copy(c.begin(), c.end(), cs.begin() + offset);
      std::copy(s.begin(), s.end(), sn.begin() + offset);
      ApplyRope(x.data() + offset, cs.data() + offset, sn.data() + offset, dim);
      EXPECT_EQ(x[offset + dim], 9.0f) << "wrote after, dim=" << dim;
      if (offset > 0) EXPECT_EQ(x[offset - 1], 9.0f) << "wrote before, dim=" << dim;
      const float* got = x.data() + offset;
      // Each output is a difference or sum of two products: fused or not, within 2 roundings of
      // each product and one of the result.
      for (size_t i = 0; i < half; ++i) {
        const double a = x0[i], b = x0[i + half];
        const double tol0 = 2 * kUlp * (std::fabs(a * c[i]) + std::fabs(b * s[i])) + kUlp * std::fabs(want[i]);
        const double tol1 = 2 * kUlp * (std::fabs(a * s[i]) + std::fabs(b * c[i])) + kUlp * std::fabs(want[i + half]);
        EXPECT_NEAR(got[i], want[i], tol0 + 1e-30) << "dim=" << dim << " i=" << i;
        EXPECT_NEAR(got[i + half], want[i + half], tol1 + 1e-30) << "dim=" << dim << " i=" << i + half;
      }
      if (offset == 0) first = Bits(got, dim);
      EXPECT_EQ(Bits(got, dim), first) << "bits depend on alignment, dim=" << dim;
    }
  }
}

TEST_P(OpsTest, Softmax) {
  std::mt19937 rng(13);
  for (size_t n : kSizes) {
    std::vector<float> x0 = RandomNormal(n, rng);
    for (float& v : x0) v *= 6.0f;  // attention scores: a spread of several units
    std::vector<float> want = x0;
    SoftmaxReference(want.data(), n);
    std::vector<uint32_t> first;
    for (size_t offset = 0; offset < 4; ++offset) {
      std::vector<float> x(n + offset + 1, 3.0f);
      std::copy(x0.begin(), x0.end(), x.begin() + offset);
      Softmax(x.data() + offset, n);
      EXPECT_EQ(x[offset + n], 3.0f) << "wrote after, n=" << n;
      if (offset > 0) EXPECT_EQ(x[offset - 1], 3.0f) << "wrote before, n=" << n;
      const float* got = x.data() + offset;
      double total = 0;
      // exp within a few ulp, the sum in float32 lanes (n/16 + 4 roundings), one scale.
      for (size_t i = 0; i < n; ++i) {
        EXPECT_NEAR(got[i], want[i], (n / 8.0 + 16) * kUlp * want[i] + 1e-30) << "n=" << n << " i=" << i;
        total += got[i];
      }
      EXPECT_NEAR(total, 1.0, (n / 8.0 + 16) * kUlp + 1e-6) << "n=" << n;
      if (offset == 0) first = Bits(got, n);
      EXPECT_EQ(Bits(got, n), first) << "bits depend on alignment, n=" << n;
    }
  }
  // Large and equal scores: no overflow, a uniform row.
  std::vector<float> big(37, 80.0f);
  Softmax(big.data(), big.size());
  for (float v : big) EXPECT_NEAR(v, 1.0f / 37, 1e-7f);
  std::vector<float> one = {-1e30f};
  Softmax(one.data(), 1);
  EXPECT_EQ(one[0], 1.0f);
  Softmax(nullptr, 0);  // nothing to do
}

TEST_P(OpsTest, AddInPlace) {
  std::mt19937 rng(14);
  for (size_t n : kSizes) {
    const std::vector<float> x0 = RandomNormal(n, rng), y0 = RandomNormal(n, rng);
    std::vector<float> want = y0;
    AddInPlaceReference(want.data(), x0.data(), n);
    for (size_t offset = 0; offset < 4; ++offset) {
      std::vector<float> y(n + offset + 1, 2.0f), x(n + 3);
      std::copy(y0.begin(), y0.end(), y.begin() + offset);
      std::copy(x0.begin(), x0.end(), x.begin() + 3 - offset % 4);
      AddInPlace(y.data() + offset, x.data() + 3 - offset % 4, n);
      EXPECT_EQ(y[offset + n], 2.0f) << "wrote after, n=" << n;
      EXPECT_EQ(Bits(y.data() + offset, n), Bits(want.data(), n)) << "n=" << n << " offset=" << offset;  // one rounding
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, OpsTest, ::testing::ValuesIn(KernelTargets()), test::TargetParamName);

}  // namespace
}  // namespace fgemma
