// AddRowCombination (kernels/vec.h), the LoRA update's second step: close to the fused scalar
// sequence on every target (equal where the target has FMA) and bit-independent of where a range
// starts or ends.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/matmul.h"
#include "kernels/vec.h"

namespace fgemma {
namespace {

TEST(AddRowCombination, MatchesTheScalarSequenceAndIgnoresTheSplit) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist;
  for (size_t k : {1u, 4u, 16u}) {
    for (size_t n : {1u, 15u, 64u, 131u}) {
      const size_t stride = n + 3;
      std::vector<float> rows(k * stride), c(k), y0(n);
      for (float& v : rows) v = dist(rng);
      for (float& v : c) v = dist(rng);
      for (float& v : y0) v = dist(rng);
      std::vector<float> want = y0;
      for (size_t i = 0; i < n; ++i) {
        for (size_t j = 0; j < k; ++j) want[i] = std::fma(c[j], rows[j * stride + i], want[i]);
      }
      for (const std::string& target : KernelTargets()) {
        ASSERT_TRUE(SetKernelTarget(target));
        std::vector<float> whole = y0, pieces = y0;
        AddRowCombination(whole.data(), rows.data(), stride, c.data(), k, n);
        // The same values in two ranges cut at an odd place.
        const size_t cut = n / 3;
        AddRowCombination(pieces.data(), rows.data(), stride, c.data(), k, cut);
        AddRowCombination(pieces.data() + cut, rows.data() + cut, stride, c.data(), k, n - cut);
        for (size_t i = 0; i < n; ++i) ASSERT_NEAR(whole[i], want[i], 1e-5f * (1 + std::abs(want[i]))) << target;
        EXPECT_EQ(std::memcmp(pieces.data(), whole.data(), n * 4), 0) << target << " k " << k << " n " << n;
        if (target == "AVX3_DL" || target == "AVX3" || target == "AVX2")  // FMA: the fused sequence exactly
          EXPECT_EQ(std::memcmp(whole.data(), want.data(), n * 4), 0) << target << " k " << k << " n " << n;
      }
      SetKernelTarget("");
    }
  }
}

}  // namespace
}  // namespace fgemma
