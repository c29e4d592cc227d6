// The weight storage types, in one table: names, block layouts, GGUF ids, row codecs and what the
// kernels need. The GGUF reader and writer, the converter and the kernels all read it, so adding a
// type (or checking one) means reading this file, not seven.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "util/status.h"

namespace fgemma {

enum class DType : uint8_t { kF32, kF16, kBF16, kQ8_0, kQ4_0 };

// Quantized types use ggml's block layouts, spelled out once as structs (the kernels read blocks
// through these sizes and offsets). Values per block:
inline constexpr size_t kQuantBlockValues = 32;
// Q8_0: x = d * q.
struct BlockQ8_0 {
  uint16_t d;                   // f16 scale
  int8_t q[kQuantBlockValues];
};
// Q4_0: x = d * (nibble - 8); low nibbles hold elements 0..15, high nibbles elements 16..31.
struct BlockQ4_0 {
  uint16_t d;                        // f16 scale
  uint8_t q[kQuantBlockValues / 2];
};
static_assert(sizeof(BlockQ8_0) == 34 && offsetof(BlockQ8_0, q) == 2, "ggml's block_q8_0");
static_assert(sizeof(BlockQ4_0) == 18 && offsetof(BlockQ4_0, q) == 2, "ggml's block_q4_0");
// The block struct of a quantized type (for kernels templated on the type).
template <DType kType>
using QuantBlock = std::conditional_t<kType == DType::kQ8_0, BlockQ8_0, BlockQ4_0>;
// Both block types start with the f16 scale; the quantized values follow it.
inline constexpr size_t kQuantBlockScaleBytes = offsetof(BlockQ8_0, q);

// Row codecs, quantizing and dequantizing side by side (util/weight_codecs.cpp). Each takes `n`
// values (a multiple of the block size) and RowBytes(type, n) bytes. The encoders are bit-exact with
// the tools that produce GGUF files:
//   Q8_0: per block of 32, d = max|x| / 127 (float32), q = round-half-away(x * (1/d)), d stored as f16.
//         Identical to ggml's quantize_row_q8_0_ref and gguf-py
//         (d = 0 and q = 0 for a zero block).
//   Q4_0: per block of 32, m = the element of largest magnitude (the first on ties), d = m / -8,
//         q = min(15, trunc(fl(fl(x * (1/d)) + 8.5f))) with both operations rounded to float32 (ggml's
//         quantize_row_q4_0_ref built without FMA contraction, which is what the fixtures hold; a
//         fused multiply-add differs on ~0.06% of values), d stored as f16 (-0.0 for a zero block).
//   F16 / BF16: round to nearest, ties to even.
// The decoders are exact (every stored value is a float32).
using QuantizeRowFn = void (*)(const float* x, size_t n, void* out);
using DequantizeRowFn = void (*)(const void* in, size_t n, float* out);
void QuantizeRowQ8_0(const float* x, size_t n, void* out);
void QuantizeRowQ4_0(const float* x, size_t n, void* out);
void ConvertRowF16(const float* x, size_t n, void* out);
void ConvertRowBf16(const float* x, size_t n, void* out);
void CopyRowF32(const float* x, size_t n, void* out);
void DequantizeRowQ8_0(const void* in, size_t n, float* out);
void DequantizeRowQ4_0(const void* in, size_t n, float* out);
void DequantizeRowF16(const void* in, size_t n, float* out);
void DequantizeRowBf16(const void* in, size_t n, float* out);
void DequantizeRowF32(const void* in, size_t n, float* out);

struct WeightTypeInfo {
  DType dtype;
  const char* name;         // fgemma's name ("q8_0"), also the CLI's --type
  const char* ggml_name;    // ggml's name ("Q8_0")
  size_t block_size;        // values per block (1 for float types)
  size_t block_bytes;       // bytes per block
  uint32_t ggml_type;       // GGUF tensor type id
  uint32_t gguf_file_type;  // llama.cpp's general.file_type (llama_ftype) for a file mostly of it
  QuantizeRowFn quantize_row;
  DequantizeRowFn dequantize_row;
  // What the kernels need: true when they compute on activations quantized to int8 per block
  // (kernels/matmul.h: PackActivations), false when they widen the weights to float32.
  bool int8_activations;
};

inline constexpr WeightTypeInfo kWeightTypes[] = {
    {DType::kF32, "f32", "F32", 1, 4, 0, 0, CopyRowF32, DequantizeRowF32, false},
    {DType::kF16, "f16", "F16", 1, 2, 1, 1, ConvertRowF16, DequantizeRowF16, false},
    {DType::kBF16, "bf16", "BF16", 1, 2, 30, 32, ConvertRowBf16, DequantizeRowBf16, false},
    {DType::kQ8_0, "q8_0", "Q8_0", kQuantBlockValues, sizeof(BlockQ8_0), 8, 7, QuantizeRowQ8_0, DequantizeRowQ8_0, true},
    {DType::kQ4_0, "q4_0", "Q4_0", kQuantBlockValues, sizeof(BlockQ4_0), 2, 2, QuantizeRowQ4_0, DequantizeRowQ4_0, true},
};

// The table's row of `t` (rows are in DType order).
constexpr const WeightTypeInfo& WeightType(DType t) { return kWeightTypes[static_cast<size_t>(t)]; }
static_assert(WeightType(DType::kQ4_0).dtype == DType::kQ4_0, "kWeightTypes is in DType order");
// The row of a GGUF tensor type id; nullptr for ids fgemma has no type for.
constexpr const WeightTypeInfo* WeightTypeByGgml(uint32_t ggml_type) {
  for (const WeightTypeInfo& w : kWeightTypes) {
    if (w.ggml_type == ggml_type) return &w;
  }
  return nullptr;
}

inline const char* DTypeName(DType t) { return WeightType(t).name; }
Result<DType> DTypeFromName(const std::string& name);  // "f32", "bf16", "q8_0", ... (case-insensitive)
// Values per block (1 for float types) and bytes per block.
constexpr size_t DTypeBlockSize(DType t) { return WeightType(t).block_size; }
constexpr size_t DTypeBlockBytes(DType t) { return WeightType(t).block_bytes; }
constexpr bool DTypeIsQuantized(DType t) { return WeightType(t).block_size > 1; }

// Bytes of one row of `cols` values; requires cols % block size == 0 (checked by loaders).
constexpr size_t RowBytes(DType t, size_t cols) { return cols / DTypeBlockSize(t) * DTypeBlockBytes(t); }

// Converts one row of `n` floats to `type` (F32 is a copy). InvalidArgument when `n` is not a
// multiple of the type's block size (the only check of `n`).
Status QuantizeRow(DType type, const float* x, size_t n, void* out);

}  // namespace fgemma
