#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "util/float_types.h"

namespace fgemma {
namespace {

TEST(FloatTypes, Bf16RoundsToNearestEven) {
  EXPECT_EQ(F32ToBf16(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly halfway between two bf16 values: ties to even (down).
  EXPECT_EQ(F32ToBf16(1.0f + 1.0f / 256), 0x3f80);
  // 1 + 3*2^-8 is halfway, the upper neighbour is even.
  EXPECT_EQ(F32ToBf16(1.0f + 3.0f / 256), 0x3f82);
  EXPECT_EQ(Bf16ToF32(0x3f80), 1.0f);
  EXPECT_TRUE(std::isnan(Bf16ToF32(F32ToBf16(NAN))));
}

TEST(FloatTypes, F16RoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t half = static_cast<uint16_t>(h);
    const float f = F16ToF32(half);
    if (std::isnan(f)) continue;
    EXPECT_EQ(F32ToF16(f), half) << std::hex << h;
  }
}

// On aarch64 F16ToF32 is the CPU's conversion: the same float as the portable definition for every
// half (a NaN stays a NaN).
TEST(FloatTypes, F16ToF32EqualsThePortableDefinition) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t half = static_cast<uint16_t>(h);
    const float a = F16ToF32(half), b = F16ToF32Portable(half);
    if (std::isnan(b)) {
      EXPECT_TRUE(std::isnan(a)) << std::hex << h;
      continue;
    }
    uint32_t ba, bb;
    std::memcpy(&ba, &a, 4);
    std::memcpy(&bb, &b, 4);
    EXPECT_EQ(ba, bb) << std::hex << h;
  }
}

TEST(FloatTypes, F16RoundsLikeHardware) {
  EXPECT_EQ(F32ToF16(65504.0f), 0x7bff);
  EXPECT_EQ(F32ToF16(65520.0f), 0x7c00);       // rounds up to infinity
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -25)), 0);  // halfway to the smallest subnormal: even (0)
  EXPECT_EQ(F32ToF16(std::ldexp(1.5f, -25)), 1);
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -24)), 1);
  // Halfway between two normals with odd lower neighbour rounds up.
  const float x = 1.0f + 3.0f * std::ldexp(1.0f, -11);
  EXPECT_EQ(F32ToF16(x), 0x3c02);
}

}  // namespace
}  // namespace fgemma
