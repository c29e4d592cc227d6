// A typed, non-owning view of a weight tensor (usually inside a memory-mapped file).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "util/status.h"
#include "util/weight_types.h"

namespace fgemma {

// 2-D row-major view: `rows` x `cols` (a 1-D tensor has rows == 1), in the stored layout of its
// type (util/weight_types.h).
struct TensorView {
  DType dtype = DType::kF32;
  size_t rows = 0;
  size_t cols = 0;
  const void* data = nullptr;

  size_t row_bytes() const { return RowBytes(dtype, cols); }
  size_t bytes() const { return rows * row_bytes(); }
  const uint8_t* row(size_t r) const { return static_cast<const uint8_t*>(data) + r * row_bytes(); }
  bool empty() const { return data == nullptr; }
};

// Decodes row `r` of `t` into `out[cols]` as float32 (reference path; used by tests and lookups).
inline void DequantizeRow(const TensorView& t, size_t r, float* out) {
  WeightType(t.dtype).dequantize_row(t.row(r), t.cols, out);
}

}  // namespace fgemma
