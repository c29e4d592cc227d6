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

// The first five are fgemma's own output types; the six after them are the rest of what llama.cpp's
// K-quant presets (Q3_K_M, Q4_K_M, Q5_K_M, ...) write for a model whose rows are not all multiples
// of 256 wide (FunctionGemma's 640): read in place, computed by kernels/matmul_kquant.cpp.
enum class DType : uint8_t { kF32, kF16, kBF16, kQ8_0, kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ4_K, kQ5_K, kQ6_K };

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
// The block struct of a quantized type (for kernels templated on the type; q8_0 and q4_0).
template <DType kType>
using QuantBlock = std::conditional_t<kType == DType::kQ8_0, BlockQ8_0, BlockQ4_0>;
// Both block types start with the f16 scale; the quantized values follow it.
inline constexpr size_t kQuantBlockScaleBytes = offsetof(BlockQ8_0, q);

// ggml's other 32-value blocks ("type-1" adds a per-block minimum m; 5-bit types keep each value's
// fifth bit in qh, little-endian: bit j for element j):
// Q4_1: x = d * nibble + m; low nibbles hold elements 0..15, high nibbles 16..31 (as Q4_0).
struct BlockQ4_1 {
  uint16_t d, m;  // f16
  uint8_t q[kQuantBlockValues / 2];
};
// Q5_0: x = d * (v - 16), v = nibble | (qh bit j) << 4, nibbles as Q4_0.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t q[kQuantBlockValues / 2];
};
// Q5_1: x = d * v + m, v as Q5_0.
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t q[kQuantBlockValues / 2];
};
// The 5-bit value (0..31) of element e < 32 of a Q5_0 / Q5_1 block, from its qh and q.
constexpr int Q5Value(const uint8_t* qh, const uint8_t* q, size_t e) {
  const uint32_t high = static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 |
                        static_cast<uint32_t>(qh[2]) << 16 | static_cast<uint32_t>(qh[3]) << 24;
  const int nibble = e < kQuantBlockValues / 2 ? q[e] & 15 : q[e - kQuantBlockValues / 2] >> 4;
  return nibble | static_cast<int>(high >> e & 1) << 4;
}
static_assert(sizeof(BlockQ4_1) == 20 && offsetof(BlockQ4_1, q) == 4, "ggml's block_q4_1");
static_assert(sizeof(BlockQ5_0) == 22 && offsetof(BlockQ5_0, q) == 6, "ggml's block_q5_0");
static_assert(sizeof(BlockQ5_1) == 24 && offsetof(BlockQ5_1, q) == 8, "ggml's block_q5_1");

// K-quants: super-blocks of 256 values.
inline constexpr size_t kSuperBlockValues = 256;
// Q4_K: 8 sub-blocks of 32; sub-block j: x = d * sc_j * nibble - dmin * m_j, with 6-bit sc_j and m_j
// packed in scales[12] (see KQuantScaleMin). Values: 4 chunks of 64 elements; chunk c's 32 bytes
// q[32c .. 32c + 31] hold elements 64c + l in their low nibbles (sub-block 2c) and 64c + 32 + l in
// their high nibbles (sub-block 2c + 1).
struct BlockQ4_K {
  uint16_t d, dmin;  // f16 super-block scales of the sub-block scales and of the mins
  uint8_t scales[12];
  uint8_t q[kSuperBlockValues / 2];
};
// Q5_K: as Q4_K plus the fifth bits: element 64c + l takes bit 2c of qh[l], element 64c + 32 + l bit
// 2c + 1 (l < 32).
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[kSuperBlockValues / 8];
  uint8_t q[kSuperBlockValues / 2];
};
// Q6_K: 16 sub-blocks of 16; x = d * scales[s] * (v - 32), v 6-bit. Two halves of 128 elements,
// half h uses ql[64h ..], qh[32h ..], scales[8h ..]; for l < 32, element 128h + 32i + l (i = 0..3)
// takes its low 4 bits from ql[64h + l] (i = 0: low nibble, 2: high nibble) or ql[64h + 32 + l]
// (i = 1: low, 3: high), its top 2 bits from bits 2i, 2i + 1 of qh[32h + l], its scale from
// scales[8h + 2i + l / 16].
struct BlockQ6_K {
  uint8_t ql[kSuperBlockValues / 2];
  uint8_t qh[kSuperBlockValues / 4];
  int8_t scales[kSuperBlockValues / 16];
  uint16_t d;
};
static_assert(sizeof(BlockQ4_K) == 144 && offsetof(BlockQ4_K, q) == 16, "ggml's block_q4_K");
static_assert(sizeof(BlockQ5_K) == 176 && offsetof(BlockQ5_K, q) == 48, "ggml's block_q5_K");
static_assert(sizeof(BlockQ6_K) == 210 && offsetof(BlockQ6_K, d) == 208, "ggml's block_q6_K");
// Sub-block j's 6-bit scale and min of a Q4_K / Q5_K scales[12]: j < 4 in the low 6 bits of bytes j
// and j + 4; j >= 4 in the nibbles of byte j + 4 (scale low, min high) with their top two bits in the
// top bits of bytes j - 4 (scale) and j (min).
struct ScaleMin {
  uint8_t scale, min;
};
constexpr ScaleMin KQuantScaleMin(const uint8_t* scales, size_t j) {
  if (j < 4) return {static_cast<uint8_t>(scales[j] & 63), static_cast<uint8_t>(scales[j + 4] & 63)};
  return {static_cast<uint8_t>((scales[j + 4] & 0xF) | (scales[j - 4] >> 6) << 4),
          static_cast<uint8_t>((scales[j + 4] >> 4) | (scales[j] >> 6) << 4)};
}
// The 4-bit value of element e < 256 of a Q4_K / Q5_K block's q[128] (sub-block e / 32).
constexpr int KQuantNibble(const uint8_t* q, size_t e) {
  const uint8_t byte = q[e / 64 * 32 + e % 32];
  return e / 32 % 2 == 0 ? byte & 15 : byte >> 4;
}
// The 5-bit value of element e < 256 of a Q5_K block (at `block`).
constexpr int Q5KValue(const uint8_t* block, size_t e) {
  return KQuantNibble(block + offsetof(BlockQ5_K, q), e) | (block[offsetof(BlockQ5_K, qh) + e % 32] >> (e / 32) & 1) << 4;
}
// The 6-bit value (0..63) of element e = 128h + 32i + l of a Q6_K block (at `block`).
constexpr int Q6KValue(const uint8_t* block, size_t e) {
  const size_t h = e / 128, i = e % 128 / 32, l = e % 32;
  const uint8_t low = block[offsetof(BlockQ6_K, ql) + 64 * h + (i % 2) * 32 + l];
  const uint8_t high = block[offsetof(BlockQ6_K, qh) + 32 * h + l];
  return (i < 2 ? low & 15 : low >> 4) | (high >> (2 * i) & 3) << 4;
}

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
// The other types (util/weight_codecs_legacy.cpp, weight_codecs_k.cpp). Encoders round to nearest
// from the format's definition (see those files); decoders are exact float32 from the definition.
void QuantizeRowQ4_1(const float* x, size_t n, void* out);
void QuantizeRowQ5_0(const float* x, size_t n, void* out);
void QuantizeRowQ5_1(const float* x, size_t n, void* out);
void QuantizeRowQ4_K(const float* x, size_t n, void* out);
void QuantizeRowQ5_K(const float* x, size_t n, void* out);
void QuantizeRowQ6_K(const float* x, size_t n, void* out);
void DequantizeRowQ4_1(const void* in, size_t n, float* out);
void DequantizeRowQ5_0(const void* in, size_t n, float* out);
void DequantizeRowQ5_1(const void* in, size_t n, float* out);
void DequantizeRowQ4_K(const void* in, size_t n, float* out);
void DequantizeRowQ5_K(const void* in, size_t n, float* out);
void DequantizeRowQ6_K(const void* in, size_t n, float* out);
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
    {DType::kQ4_1, "q4_1", "Q4_1", kQuantBlockValues, sizeof(BlockQ4_1), 3, 3, QuantizeRowQ4_1, DequantizeRowQ4_1, true},
    {DType::kQ5_0, "q5_0", "Q5_0", kQuantBlockValues, sizeof(BlockQ5_0), 6, 8, QuantizeRowQ5_0, DequantizeRowQ5_0, true},
    {DType::kQ5_1, "q5_1", "Q5_1", kQuantBlockValues, sizeof(BlockQ5_1), 7, 9, QuantizeRowQ5_1, DequantizeRowQ5_1, true},
    // general.file_type of a file of only K type: llama.cpp's Q4_K_S (14), Q5_K_S (16), Q6_K (18).
    {DType::kQ4_K, "q4_K", "Q4_K", kSuperBlockValues, sizeof(BlockQ4_K), 12, 14, QuantizeRowQ4_K, DequantizeRowQ4_K, true},
    {DType::kQ5_K, "q5_K", "Q5_K", kSuperBlockValues, sizeof(BlockQ5_K), 13, 16, QuantizeRowQ5_K, DequantizeRowQ5_K, true},
    {DType::kQ6_K, "q6_K", "Q6_K", kSuperBlockValues, sizeof(BlockQ6_K), 14, 18, QuantizeRowQ6_K, DequantizeRowQ6_K, true},
};

// The table's row of `t` (rows are in DType order).
constexpr const WeightTypeInfo& WeightType(DType t) { return kWeightTypes[static_cast<size_t>(t)]; }
static_assert(WeightType(DType::kQ4_0).dtype == DType::kQ4_0 && WeightType(DType::kQ6_K).dtype == DType::kQ6_K,
              "kWeightTypes is in DType order");
// The row of a GGUF tensor type id; nullptr for ids fgemma has no type for.
constexpr const WeightTypeInfo* WeightTypeByGgml(uint32_t ggml_type) {
  for (const WeightTypeInfo& w : kWeightTypes) {
    if (w.ggml_type == ggml_type) return &w;
  }
  return nullptr;
}

inline const char* DTypeName(DType t) { return WeightType(t).name; }
Result<DType> DTypeFromName(const std::string& name);  // "f32", "bf16", "q8_0", "q4_K", ... (case-insensitive)
// "f32, f16, bf16, q8_0, ... or q6_K": every name DTypeFromName takes, for messages.
std::string WeightTypeNames();
// Values per block (1 for float types) and bytes per block.
constexpr size_t DTypeBlockSize(DType t) { return WeightType(t).block_size; }
constexpr size_t DTypeBlockBytes(DType t) { return WeightType(t).block_bytes; }
constexpr bool DTypeIsQuantized(DType t) { return WeightType(t).block_size > 1; }
// The types the interleaved / panel kernels of q8_0 and q4_0 read (kernels/matmul_internal.h); the
// other quantized types take kernels/matmul_kquant.cpp.
constexpr bool DTypeIsQ8OrQ4_0(DType t) { return t == DType::kQ8_0 || t == DType::kQ4_0; }

// Bytes of one row of `cols` values; requires cols % block size == 0 (checked by loaders).
constexpr size_t RowBytes(DType t, size_t cols) { return cols / DTypeBlockSize(t) * DTypeBlockBytes(t); }

// The element of largest magnitude of x[0, n), the first on ties, with its sign (0 for zeros):
// ggml's symmetric encoders (q4_0, q5_0, q6_K) scale by it.
inline float LargestMagnitude(const float* x, size_t n) {
  float amax = 0.0f, max = 0.0f;
  for (size_t j = 0; j < n; ++j) {
    const float a = x[j] < 0.0f ? -x[j] : x[j];
    if (a > amax) {
      amax = a;
      max = x[j];
    }
  }
  return max;
}

// Converts one row of `n` floats to `type` (F32 is a copy). InvalidArgument when `n` is not a
// multiple of the type's block size (the only check of `n`).
Status QuantizeRow(DType type, const float* x, size_t n, void* out);

}  // namespace fgemma
