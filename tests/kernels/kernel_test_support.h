// Shared by the kernel tests: a fixture parameterized over every SIMD target compiled in and
// supported by this CPU, and random inputs.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/matmul.h"

namespace fgemma::test {

// Forces the parameter's target for the test; restores automatic dispatch when it ends.
class TargetTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ASSERT_TRUE(SetKernelTarget(GetParam())); }
  void TearDown() override { SetKernelTarget(""); }
};

inline std::string TargetParamName(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

// n samples of N(0, 1).
inline std::vector<float> RandomNormal(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = normal(rng);
  return v;
}

}  // namespace fgemma::test
