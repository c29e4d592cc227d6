#include "kernels/cpu_features.h"

#include <cstdlib>
#include <cstring>

#if defined(__linux__) && (defined(__aarch64__) || defined(__arm__))
#include <sys/auxv.h>
#endif

namespace fgemma {

ArmFeatures ArmFeaturesFromHwcap(bool aarch64, uint64_t hwcap, uint64_t hwcap2) {
  // Bit numbers from the Linux uapi headers (asm/hwcap.h of arm64 and arm), spelled out so that
  // any build can decode either ABI's values (tests run on the build machine too).
  ArmFeatures f;
  if (aarch64) {
    f.neon = (hwcap >> 1) & 1;      // HWCAP_ASIMD
    f.dotprod = (hwcap >> 20) & 1;  // HWCAP_ASIMDDP
    f.i8mm = (hwcap2 >> 13) & 1;    // HWCAP2_I8MM
    f.bf16 = (hwcap2 >> 14) & 1;    // HWCAP2_BF16
    f.fhm = (hwcap >> 23) & 1;      // HWCAP_ASIMDFHM
  } else {
    f.neon = (hwcap >> 12) & 1;     // HWCAP_NEON
    f.dotprod = (hwcap >> 24) & 1;  // HWCAP_ASIMDDP
    f.i8mm = (hwcap >> 27) & 1;     // HWCAP_I8MM
  }
  f.dotprod = f.dotprod && f.neon;
  f.i8mm = f.i8mm && f.neon;
  f.bf16 = f.bf16 && f.neon;
  f.fhm = f.fhm && f.neon;
  return f;
}

ArmTarget ChooseArmTarget(bool aarch64, const ArmFeatures& features, const char* override_name) {
  if (!features.neon) return ArmTarget::kNone;
  ArmTarget detected = features.dotprod ? ArmTarget::kNeonDotprod : ArmTarget::kNeon;
  // The smmla kernels read the dot-product panels and use sdot for single tokens: both needed.
  if (aarch64 && features.dotprod && features.i8mm) detected = ArmTarget::kNeonI8mm;
  // bfdot / bfmmla for bf16 weights beside the i8mm kernels (a linear order of targets).
  if (detected == ArmTarget::kNeonI8mm && features.bf16) detected = ArmTarget::kNeonBf16;
  if (override_name == nullptr) return detected;
  if (std::strcmp(override_name, "NEON") == 0) return ArmTarget::kNeon;
  if (std::strcmp(override_name, "NEON_DOTPROD") == 0) {
    if (!aarch64) return ArmTarget::kNeonDotprod;
    return detected == ArmTarget::kNeonI8mm || detected == ArmTarget::kNeonBf16 ? ArmTarget::kNeonDotprod : detected;
  }
  if (std::strcmp(override_name, "NEON_I8MM") == 0) {  // lowers NEON_BF16, never raises
    return detected == ArmTarget::kNeonBf16 ? ArmTarget::kNeonI8mm : detected;
  }
  return detected;  // NEON_BF16: only where detected (never raised); others: automatic
}

const char* ArmTargetName(ArmTarget target) {
  switch (target) {
    case ArmTarget::kNeon: return "NEON";
    case ArmTarget::kNeonDotprod: return "NEON_DOTPROD";
    case ArmTarget::kNeonI8mm: return "NEON_I8MM";
    case ArmTarget::kNeonBf16: return "NEON_BF16";
    case ArmTarget::kNone: break;
  }
  return "";
}

ArmTarget DetectedArmTarget() {
#if defined(__linux__) && (defined(__aarch64__) || defined(__arm__)) && defined(FGEMMA_ARM_DOT)
  static const ArmTarget target = [] {
#if defined(__aarch64__)
    constexpr bool kAarch64 = true;
#else
    constexpr bool kAarch64 = false;
#endif
    const ArmFeatures f = ArmFeaturesFromHwcap(kAarch64, getauxval(AT_HWCAP), getauxval(AT_HWCAP2));
    return ChooseArmTarget(kAarch64, f, std::getenv("FGEMMA_ARM_TARGET"));
  }();
  return target;
#else
  return ArmTarget::kNone;
#endif
}

}  // namespace fgemma
