// Arm target detection from given hwcap values (the CPUs qemu emulates do not cover every case:
// qemu-arm -cpu max runs vsdot without reporting it) and the environment override.
#include "kernels/cpu_features.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "kernels/matmul.h"

namespace fgemma {
namespace {

constexpr uint64_t kA64Asimd = 1u << 1, kA64Dotprod = 1u << 20, kA64I8mm2 = 1u << 13, kA64Bf16 = 1u << 14,
                   kA64Fhm = 1u << 23;
constexpr uint64_t kA32Neon = 1u << 12, kA32Dotprod = 1u << 24, kA32I8mm = 1u << 27;

TEST(ArmFeatures, DecodesAarch64Hwcaps) {
  // qemu-aarch64 -cpu cortex-a53: fp, asimd, ...; -cpu max adds asimddp and (hwcap2) i8mm.
  ArmFeatures a53 = ArmFeaturesFromHwcap(true, kA64Asimd | 1u /*fp*/ | (1u << 3), 0);
  EXPECT_TRUE(a53.neon);
  EXPECT_FALSE(a53.dotprod);
  EXPECT_FALSE(a53.i8mm);
  ArmFeatures max = ArmFeaturesFromHwcap(true, kA64Asimd | kA64Dotprod, kA64I8mm2);
  EXPECT_TRUE(max.neon && max.dotprod && max.i8mm);
  // The AArch32 bit numbers mean something else on aarch64 and the other way round.
  EXPECT_FALSE(ArmFeaturesFromHwcap(true, kA32Neon | kA32Dotprod, 0).neon);
  EXPECT_FALSE(ArmFeaturesFromHwcap(false, kA64Asimd | kA64Dotprod, kA64I8mm2).neon);
  // A dot product without NEON is not usable.
  EXPECT_FALSE(ArmFeaturesFromHwcap(true, kA64Dotprod, 0).dotprod);
  // qemu-aarch64 -cpu max also reports bf16 (hwcap2) and fhm (hwcap).
  ArmFeatures bf = ArmFeaturesFromHwcap(true, kA64Asimd | kA64Dotprod | kA64Fhm, kA64I8mm2 | kA64Bf16);
  EXPECT_TRUE(bf.bf16 && bf.fhm && bf.i8mm);
  EXPECT_FALSE(max.bf16 || max.fhm);
  EXPECT_FALSE(ArmFeaturesFromHwcap(false, kA64Asimd | kA64Fhm, kA64Bf16).bf16);
}

TEST(ArmFeatures, DecodesAarch32Hwcaps) {
  ArmFeatures a15 = ArmFeaturesFromHwcap(false, kA32Neon | (1u << 16) /*vfpv4*/, 0);
  EXPECT_TRUE(a15.neon);
  EXPECT_FALSE(a15.dotprod);
  ArmFeatures a55 = ArmFeaturesFromHwcap(false, kA32Neon | kA32Dotprod | kA32I8mm, 0);
  EXPECT_TRUE(a55.neon && a55.dotprod && a55.i8mm);
  EXPECT_FALSE(ArmFeaturesFromHwcap(false, 0, 0).neon);
}

TEST(ArmFeatures, ChoosesTheBestTargetAndOverridesLowerIt) {
  const ArmFeatures none{}, neon{true, false, false}, dot{true, true, false};
  for (bool a64 : {true, false}) {
    EXPECT_EQ(ChooseArmTarget(a64, none, nullptr), ArmTarget::kNone);
    EXPECT_EQ(ChooseArmTarget(a64, none, "NEON_DOTPROD"), ArmTarget::kNone);
    EXPECT_EQ(ChooseArmTarget(a64, neon, nullptr), ArmTarget::kNeon);
    EXPECT_EQ(ChooseArmTarget(a64, dot, nullptr), ArmTarget::kNeonDotprod);
    EXPECT_EQ(ChooseArmTarget(a64, dot, "NEON"), ArmTarget::kNeon);
    EXPECT_EQ(ChooseArmTarget(a64, dot, "NEON_DOTPROD"), ArmTarget::kNeonDotprod);
    EXPECT_EQ(ChooseArmTarget(a64, dot, ""), ArmTarget::kNeonDotprod);
    EXPECT_EQ(ChooseArmTarget(a64, dot, "bogus"), ArmTarget::kNeonDotprod);
  }
  // i8mm (smmla) is a target of its own on aarch64 with the dot product; overrides lower it, never
  // raise to it; AArch32 has no smmla kernel, so its i8mm CPUs get the dot product.
  const ArmFeatures mm{true, true, true}, mm_no_dot{true, false, true};
  EXPECT_EQ(ChooseArmTarget(true, mm, nullptr), ArmTarget::kNeonI8mm);
  EXPECT_EQ(ChooseArmTarget(true, mm, "NEON_I8MM"), ArmTarget::kNeonI8mm);
  EXPECT_EQ(ChooseArmTarget(true, mm, "NEON_DOTPROD"), ArmTarget::kNeonDotprod);
  EXPECT_EQ(ChooseArmTarget(true, mm, "NEON"), ArmTarget::kNeon);
  EXPECT_EQ(ChooseArmTarget(true, mm_no_dot, nullptr), ArmTarget::kNeon);
  EXPECT_EQ(ChooseArmTarget(true, dot, "NEON_I8MM"), ArmTarget::kNeonDotprod);
  EXPECT_EQ(ChooseArmTarget(false, mm, nullptr), ArmTarget::kNeonDotprod);
  EXPECT_EQ(ChooseArmTarget(false, mm, "NEON_I8MM"), ArmTarget::kNeonDotprod);
  // Raising is refused on aarch64 (the hwcaps are reliable there) and allowed on AArch32 (qemu-arm
  // -cpu max runs vsdot without reporting it).
  EXPECT_EQ(ChooseArmTarget(true, neon, "NEON_DOTPROD"), ArmTarget::kNeon);
  EXPECT_EQ(ChooseArmTarget(false, neon, "NEON_DOTPROD"), ArmTarget::kNeonDotprod);
  // bf16 (bfdot / bfmmla) on top of i8mm on aarch64; FGEMMA_ARM_TARGET=NEON_I8MM (or lower) keeps
  // the float path for bf16 weights; without i8mm, or on AArch32, bf16 adds no target.
  ArmFeatures bf{true, true, true};
  bf.bf16 = true;
  EXPECT_EQ(ChooseArmTarget(true, bf, nullptr), ArmTarget::kNeonBf16);
  EXPECT_EQ(ChooseArmTarget(true, bf, "NEON_BF16"), ArmTarget::kNeonBf16);
  EXPECT_EQ(ChooseArmTarget(true, bf, "NEON_I8MM"), ArmTarget::kNeonI8mm);
  EXPECT_EQ(ChooseArmTarget(true, bf, "NEON_DOTPROD"), ArmTarget::kNeonDotprod);
  EXPECT_EQ(ChooseArmTarget(true, bf, "NEON"), ArmTarget::kNeon);
  EXPECT_EQ(ChooseArmTarget(true, mm, "NEON_BF16"), ArmTarget::kNeonI8mm);
  ArmFeatures bf_no_mm{true, true, false};
  bf_no_mm.bf16 = true;
  EXPECT_EQ(ChooseArmTarget(true, bf_no_mm, nullptr), ArmTarget::kNeonDotprod);
  EXPECT_EQ(ChooseArmTarget(false, bf, nullptr), ArmTarget::kNeonDotprod);
  EXPECT_STREQ(ArmTargetName(ArmTarget::kNeonBf16), "NEON_BF16");
  EXPECT_STREQ(ArmTargetName(ArmTarget::kNeonDotprod), "NEON_DOTPROD");
  EXPECT_STREQ(ArmTargetName(ArmTarget::kNeonI8mm), "NEON_I8MM");
  EXPECT_STREQ(ArmTargetName(ArmTarget::kNeon), "NEON");
  EXPECT_STREQ(ArmTargetName(ArmTarget::kNone), "");
}

// This process: the dot-product target is listed and named when detected, and only on Arm.
TEST(ArmFeatures, RunningTargetIsReported) {
  const ArmTarget t = DetectedArmTarget();
#if !(defined(__aarch64__) || defined(__arm__))
  EXPECT_EQ(t, ArmTarget::kNone);
#endif
  const char* env = std::getenv("FGEMMA_ARM_TARGET");
  std::printf("arm target: '%s' (FGEMMA_ARM_TARGET=%s), kernels %s\n", ArmTargetName(t), env ? env : "", KernelTargetName());
  if (t == ArmTarget::kNeonDotprod || t == ArmTarget::kNeonI8mm || t == ArmTarget::kNeonBf16) {
    EXPECT_STREQ(KernelTargetName(), ArmTargetName(t));
  } else {
    EXPECT_STRNE(KernelTargetName(), "NEON_DOTPROD");
    EXPECT_STRNE(KernelTargetName(), "NEON_I8MM");
    EXPECT_STRNE(KernelTargetName(), "NEON_BF16");
  }
  if (env != nullptr && std::string(env) == "NEON") EXPECT_TRUE(t == ArmTarget::kNeon || t == ArmTarget::kNone);
  if (env != nullptr && std::string(env) == "NEON_DOTPROD") EXPECT_TRUE(t != ArmTarget::kNeonI8mm && t != ArmTarget::kNeonBf16);
  if (env != nullptr && std::string(env) == "NEON_I8MM") EXPECT_NE(t, ArmTarget::kNeonBf16);
}

}  // namespace
}  // namespace fgemma
