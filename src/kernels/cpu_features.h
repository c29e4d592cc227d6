// Arm CPU features for the kernels that Highway does not dispatch (the int8 dot-product panels of
// kernels/matmul_arm_dot.cpp). One build per ABI serves every core: the target is chosen at run
// time from the kernel's hwcaps, and FGEMMA_ARM_TARGET may force another (for tests and
// comparisons; see ChooseArmTarget).
#pragma once

#include <cstdint>

namespace fgemma {

enum class ArmTarget {
  kNone,          // not an Arm build, or no NEON: Highway's targets only
  kNeon,          // ASIMD / NEON without the dot product: Highway's NEON kernels
  kNeonDotprod,   // + sdot (aarch64) / vsdot (AArch32): row panels of 4 (matmul_arm_dot.cpp)
  kNeonI8mm,      // aarch64 + smmla as well: multi-token products in 2x2 tiles (matmul_arm_i8mm.cpp)
  kNeonBf16,      // aarch64 + bfdot / bfmmla as well: bf16 weights on bf16 activations in 4-row panels
                  // (matmul_arm_bf16.cpp); the int8 kernels are NEON_I8MM's
};

// The features the kernel reports in getauxval(AT_HWCAP) / getauxval(AT_HWCAP2).
struct ArmFeatures {
  bool neon = false;
  bool dotprod = false;
  bool i8mm = false;  // smmla (kernels on aarch64 only)
  bool bf16 = false;  // bfdot, bfmmla, bfcvt (FEAT_BF16; kernels on aarch64 only)
  bool fhm = false;   // fmlal / fmlal2 (FEAT_FHM; reported, no kernel uses it: docs/design/arm.md)
};
// Decodes hwcap values as an aarch64 (`aarch64` true) or an AArch32 process sees them.
ArmFeatures ArmFeaturesFromHwcap(bool aarch64, uint64_t hwcap, uint64_t hwcap2);

// The target for `features`, lowered by `override_name` (FGEMMA_ARM_TARGET: "NEON", "NEON_DOTPROD",
// "NEON_I8MM" or "NEON_BF16"; null, empty or unknown: no override). An override never raises the target above
// what the features allow, except NEON_DOTPROD in a 32-bit process (`aarch64` false) on a CPU with
// NEON: qemu-arm -cpu max executes vsdot without reporting it in AT_HWCAP, so tests force it there.
// NEON_I8MM needs aarch64 with both the dot product and i8mm (no AArch32 smmla kernel); NEON_BF16
// needs that and bf16 (Armv8.6-A makes both mandatory; a CPU with bf16 and no i8mm runs NEON_I8MM's
// lower targets and today's float path for bf16 weights).
ArmTarget ChooseArmTarget(bool aarch64, const ArmFeatures& features, const char* override_name);

const char* ArmTargetName(ArmTarget target);  // "", "NEON", "NEON_DOTPROD", "NEON_I8MM", "NEON_BF16"

// This process's: detected once from getauxval and FGEMMA_ARM_TARGET (kNone off Arm).
ArmTarget DetectedArmTarget();

}  // namespace fgemma
