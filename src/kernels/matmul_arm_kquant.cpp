// The expanded-row kernels (kernels/arm_kquant-inl.h) with sdot / vsdot: compiled for ARMv8.2-A +
// dotprod (src/CMakeLists.txt), called only when the CPU has the dot product (kernels/cpu_features.h).
#include "kernels/matmul_arm_dot.h"

#if defined(FGEMMA_ARM_DOT)
#include "kernels/arm_kquant-inl.h"

namespace fgemma::kernels_internal {
void ArmKQuantDotMatMul(const ArmKQuantJob& job) { KQuantRun<true>(job); }
}  // namespace fgemma::kernels_internal
#endif  // FGEMMA_ARM_DOT
