// vec.h helpers on every SIMD target. Tolerance for Dot: n * 2^-24 * sum |a_i b_i| (any float32
// summation order); AddScaled and Scale are one rounding per element, exact up to FMA vs mul+add.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/vec.h"

namespace fgemma {
namespace {

class VecTest : public test::TargetTest {};

using test::RandomNormal;

const size_t kVecSizes[] = {0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 100, 256, 1000, 2048};

TEST_P(VecTest, Dot) {
  std::mt19937 rng(5);
  for (size_t n : kVecSizes) {
    for (size_t offset = 0; offset < 3; ++offset) {
      const std::vector<float> a = RandomNormal(n + offset, rng), b = RandomNormal(n + 1, rng);
      double want = 0, abs_sum = 0;
      for (size_t i = 0; i < n; ++i) {
        want += static_cast<double>(a[i + offset]) * b[i + 1];
        abs_sum += std::fabs(static_cast<double>(a[i + offset]) * b[i + 1]);
      }
      const float got = Dot(a.data() + offset, b.data() + 1, n);
      EXPECT_LE(std::fabs(got - want), (n + 8) * abs_sum / (1 << 24) + 1e-30) << "n=" << n;
    }
  }
}

TEST_P(VecTest, AddScaledAndScale) {
  std::mt19937 rng(6);
  for (size_t n : kVecSizes) {
    const std::vector<float> x = RandomNormal(n + 2, rng), y0 = RandomNormal(n + 2, rng);
    std::vector<float> y = y0;
    AddScaled(y.data() + 1, x.data() + 2, 0.37f, n);
    for (size_t i = 0; i < n + 2; ++i) {
      if (i == 0 || i > n) {
        EXPECT_EQ(y[i], y0[i]) << "wrote outside at " << i;
      } else {
        const float want = std::fma(0.37f, x[i + 1], y0[i]);
        EXPECT_NEAR(y[i], want, 2e-7f * (std::fabs(want) + std::fabs(0.37f * x[i + 1]))) << i;
      }
    }
    std::vector<float> z = y0;
    Scale(z.data() + 1, -1.5f, n);
    for (size_t i = 0; i < n + 2; ++i) EXPECT_EQ(z[i], (i == 0 || i > n) ? y0[i] : y0[i] * -1.5f) << i;
  }
}

// MaxValue: the exact largest at every size and offset (-inf when empty), NaNs ignored wherever
// they are (the LM head's skip test must never miss a value above the best so far).
TEST_P(VecTest, MaxValue) {
  std::mt19937 rng(7);
  for (size_t n : kVecSizes) {
    for (size_t offset = 0; offset < 3; ++offset) {
      std::vector<float> x = RandomNormal(n + offset, rng);
      float want = -INFINITY;
      for (size_t i = offset; i < n + offset; ++i) want = std::max(want, x[i]);
      EXPECT_EQ(MaxValue(x.data() + offset, n), want) << "n=" << n;
      if (n == 0) continue;
      x[offset + (n * 7) % n] = 1e30f;  // the largest anywhere, also in a tail
      EXPECT_EQ(MaxValue(x.data() + offset, n), 1e30f) << "n=" << n;
      x[offset + (n * 7) % n] = want;
      x[offset + n / 2] = NAN;
      float others = -INFINITY;
      for (size_t i = offset; i < n + offset; ++i)
        if (!std::isnan(x[i])) others = std::max(others, x[i]);
      const float got = MaxValue(x.data() + offset, n);
      EXPECT_EQ(got, others) << "n=" << n;
      std::vector<float> nan_first(n, NAN);
      nan_first[n - 1] = 3.0f;
      EXPECT_EQ(MaxValue(nan_first.data(), n), 3.0f) << "n=" << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, VecTest, ::testing::ValuesIn(KernelTargets()),
                         test::TargetParamName);

}  // namespace
}  // namespace fgemma
