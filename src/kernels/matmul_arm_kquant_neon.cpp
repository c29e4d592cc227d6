// The expanded-row kernels (kernels/arm_kquant-inl.h) for NEON without the dot product (Cortex-A53,
// A15 class): compiled with the baseline flags, so only where the baseline has NEON (aarch64, armhf;
// not armhf-noneon, where Highway's portable code runs).
#include "kernels/matmul_arm_dot.h"

#if defined(FGEMMA_ARM_DOT) && defined(__ARM_NEON)
#include "kernels/arm_kquant-inl.h"

namespace fgemma::kernels_internal {
void ArmKQuantNeonMatMul(const ArmKQuantJob& job) { KQuantRun<false>(job); }
}  // namespace fgemma::kernels_internal
#endif
