// A typed, non-owning view of a weight tensor (usually inside a memory-mapped file).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "util/status.h"

namespace fgemma {

// Storage types. Quantized types use ggml's block layouts:
//   Q8_0: 32 values per 34-byte block {f16 scale d; int8 q[32]}, x = d * q
//   Q4_0: 32 values per 18-byte block {f16 scale d; uint8 q[16]}, x = d * (nibble - 8),
//         low nibbles hold elements 0..15, high nibbles elements 16..31.
enum class DType : uint8_t { kF32, kF16, kBF16, kQ8_0, kQ4_0 };

const char* DTypeName(DType t);
Result<DType> DTypeFromName(const std::string& name);  // "f32", "bf16", "q8_0", ... (case-insensitive)
// Values per block (1 for float types) and bytes per block.
size_t DTypeBlockSize(DType t);
size_t DTypeBlockBytes(DType t);
inline bool DTypeIsQuantized(DType t) { return t == DType::kQ8_0 || t == DType::kQ4_0; }

// Bytes of one row of `cols` values; requires cols % block size == 0 (checked by loaders).
inline size_t RowBytes(DType t, size_t cols) { return cols / DTypeBlockSize(t) * DTypeBlockBytes(t); }

// 2-D row-major view: `rows` x `cols` (a 1-D tensor has rows == 1).
struct TensorView {
  DType dtype = DType::kF32;
  size_t rows = 0;
  size_t cols = 0;
  const void* data = nullptr;
  // Optional copy of a quantized matrix in the row-interleaved layout of the integer kernels that
  // use one (kernels/matmul.h: InterleaveWeights), made once at load; `data` stays the stored form.
  const void* interleaved = nullptr;

  size_t row_bytes() const { return RowBytes(dtype, cols); }
  size_t bytes() const { return rows * row_bytes(); }
  const uint8_t* row(size_t r) const { return static_cast<const uint8_t*>(data) + r * row_bytes(); }
  bool empty() const { return data == nullptr; }
};

// Decodes row `r` of `t` into `out[cols]` as float32 (reference path; used by tests and lookups).
void DequantizeRow(const TensorView& t, size_t r, float* out);

}  // namespace fgemma
