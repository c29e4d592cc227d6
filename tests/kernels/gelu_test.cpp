// Vector GELU-tanh against its scalar reference, across sizes, tails and misalignment.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/ops.h"
#include "kernels/vec.h"

namespace fgemma {
namespace {

TEST(GeluTanhMul, MatchesScalarReference) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (size_t n : {0u, 1u, 3u, 15u, 16u, 17u, 33u, 128u, 2048u, 2049u}) {
    for (size_t offset : {0u, 1u, 3u}) {
      std::vector<float> gate(n + offset), up(n + offset);
      for (auto& v : gate) v = dist(rng);
      for (auto& v : up) v = dist(rng);
      if (n > 0) gate[offset] = 40.0f;  // saturated tanh
      const std::vector<float> input = gate;
      std::vector<float> want = gate;
      GeluTanhMulReference(want.data() + offset, up.data() + offset, n);
      GeluTanhMul(gate.data() + offset, up.data() + offset, n);
      for (size_t i = 0; i < n; ++i) {
        // Both round 1 + tanh(.) to float (error ~ 2^-24), scaled by 0.5 * g * up.
        const float ref = want[offset + i];
        const float scale = std::max(1.0f, std::abs(input[offset + i] * up[offset + i]));
        EXPECT_NEAR(gate[offset + i], ref, 4e-7f * scale) << "n " << n << " i " << i;
      }
    }
  }
}

}  // namespace
}  // namespace fgemma
