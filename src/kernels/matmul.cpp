// TEMPORARY: forwards to the scalar reference until the SIMD kernels land.
#include "kernels/matmul.h"

namespace fgemma {

size_t PackedActivationBytes(DType, size_t, size_t) { return 0; }
void PackActivations(DType, size_t, Activations*, void*) {}
void MatMul(const TensorView& w, const Activations& a, float* y, size_t y_stride, size_t row_begin, size_t row_end) {
  MatMulReference(w, a, y, y_stride, row_begin, row_end);
}
const char* KernelTargetName() { return "scalar"; }

}  // namespace fgemma
