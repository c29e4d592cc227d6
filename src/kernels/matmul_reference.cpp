// Scalar reference for MatMul: dequantize a row, accumulate in double. Slow and obviously right.
#include <vector>

#include "kernels/matmul.h"

namespace fgemma {

void MatMulReference(const TensorView& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                     size_t row_end) {
  std::vector<float> row(w.cols);
  for (size_t r = row_begin; r < row_end; ++r) {
    DequantizeRow(w, r, row.data());
    for (size_t t = 0; t < a.num_tokens; ++t) {
      const float* x = a.data + t * a.stride;
      double acc = 0;
      for (size_t k = 0; k < w.cols; ++k) acc += static_cast<double>(row[k]) * x[k];
      y[t * y_stride + r] = static_cast<float>(acc);
    }
  }
}

}  // namespace fgemma
