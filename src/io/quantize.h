// Reference conversions of float32 rows into the storage types of util/tensor.h, bit-exact with the
// tools that produce GGUF files:
//   Q8_0: per block of 32, d = max|x| / 127 (float32), q = round-half-away(x * (1/d)), d stored as f16.
//         Identical to ggml's quantize_row_q8_0_ref and gguf-py
//         (d = 0 and q = 0 for a zero block).
//   Q4_0: per block of 32, m = the element of largest magnitude (the first on ties), d = m / -8,
//         q = min(15, trunc(fl(fl(x * (1/d)) + 8.5f))) with both operations rounded to float32 (ggml's
//         quantize_row_q4_0_ref built without FMA contraction, which is what the fixtures hold; a
//         fused multiply-add differs on ~0.06% of values), d stored as f16 (-0.0 for a zero block).
//   F16 / BF16: round to nearest, ties to even.
// All functions take `n` values (a multiple of 32 for the block types) and write RowBytes(type, n)
// bytes; `n` is checked only by QuantizeRow.
#pragma once

#include <cstddef>
#include <cstdint>

#include "util/status.h"
#include "util/tensor.h"

namespace fgemma {

void QuantizeRowQ8_0(const float* x, size_t n, void* out);
void QuantizeRowQ4_0(const float* x, size_t n, void* out);
void ConvertRowF16(const float* x, size_t n, void* out);
void ConvertRowBf16(const float* x, size_t n, void* out);

// Converts one row of `n` floats to `type` (F32 is a copy). InvalidArgument when `n` is not a
// multiple of the type's block size.
Status QuantizeRow(DType type, const float* x, size_t n, void* out);

}  // namespace fgemma
