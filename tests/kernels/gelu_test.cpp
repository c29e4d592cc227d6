// Vector GELU-tanh against its scalar reference on every SIMD target, across sizes, tails,
// misalignment and saturated inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <random>
#include <vector>

#include "kernels/ops.h"
#include "kernels/vec.h"
#include "kernel_test_support.h"

namespace fgemma {
namespace {

class GeluKernelTest : public test::TargetTest {};

TEST_P(GeluKernelTest, MatchesScalarReference) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (size_t n : {0u, 1u, 3u, 15u, 16u, 17u, 33u, 128u, 2048u, 2049u}) {
    for (size_t offset : {0u, 1u, 3u}) {
      std::vector<float> gate(n + offset), up(n + offset);
      for (auto& v : gate) v = dist(rng);
      for (auto& v : up) v = dist(rng);
      // Saturated both ways, and where exp(-2u) is clamped (g below about -9.3).
      const float extremes[] = {40.0f, -40.0f, -9.0f, -12.0f, -1e4f, 1e4f};
      for (size_t e = 0; e < std::size(extremes) && 2 * e < n; ++e) gate[offset + 2 * e] = extremes[e];
      const std::vector<float> input = gate;
      std::vector<float> want = gate;
      GeluTanhMulReference(want.data() + offset, up.data() + offset, n);
      GeluTanhMul(gate.data() + offset, up.data() + offset, n);
      for (size_t i = 0; i < n; ++i) {
        // A few float roundings of g * up (the reference rounds 1 + tanh(.), the kernel exp and a
        // division).
        const float ref = want[offset + i];
        const float scale = std::max(1.0f, std::abs(input[offset + i] * up[offset + i]));
        EXPECT_NEAR(gate[offset + i], ref, 4e-7f * scale) << "n " << n << " i " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, GeluKernelTest, ::testing::ValuesIn(KernelTargets()), test::TargetParamName);

}  // namespace
}  // namespace fgemma
