// Internal interface between the kernel translation units (not for use outside src/kernels, the
// kernel tests and the benchmark workbench).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/matmul.h"

namespace fgemma::kernels_internal {

// Packed activations for the quantized weight types, one record per token (packed_stride bytes):
//   int8_t  q[nb * 32]     x quantized per 32-block: x[k] ~= d[b] * q[k], q in [-127, 127]
//   float   d8[nb * 8]     d[b] repeated 8 times (a ready-made lane pattern for 8-lane int32 sums)
//   int32_t corr[nb * 8]   -128 * (q[4j] + q[4j+1] + q[4j+2] + q[4j+3]) for each group of 4: the
//                          VNNI kernel feeds weights to the unsigned operand of u8 x s8 dot
//                          products as w + 128 and starts each int32 lane from corr.
//   int32_t bsum[nb * 2]   {-128 * s_b, -8 * s_b}, s_b = the sum of block b's q: the starting values
//                          of the row-interleaved kernels' block dots (q8_0 weights enter as w + 128,
//                          q4_0 weights as their nibble w + 8).
// with nb = cols / 32. Quantization: d = amax / 127, q = round_half_even(x * (127 / amax)). The
// same record serves q8_0 and q4_0 weights, on every target.
struct QuantLayout {
  size_t blocks = 0;
  size_t d8_offset = 0;
  size_t corr_offset = 0;
  size_t bsum_offset = 0;
  size_t used = 0;    // bytes of q, d8, corr and bsum: 104 per block; zero padding from here to stride
  size_t stride = 0;  // bytes per token, a multiple of 64
};
inline QuantLayout QuantLayoutFor(size_t cols) {
  QuantLayout l;
  l.blocks = cols / kQuantBlockValues;  // activation blocks match the weight blocks
  l.d8_offset = l.blocks * 32;
  l.corr_offset = l.blocks * 64;
  l.bsum_offset = l.blocks * 96;
  l.used = l.blocks * 104;
  l.stride = (l.used + 63) / 64 * 64;
  return l;
}

// Runtime-dispatched entry points (each in its own translation unit).
void MatMulFloat(const TensorView& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                 size_t row_end);
// Requires a.packed in the QuantLayout above.
void MatMulQuant(const KernelMatrix& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                 size_t row_end);
void PackQuant(size_t cols, const float* x, size_t x_stride, size_t num_tokens, uint8_t* out);

// Row-interleaved quantized weights (KernelMatrix::repacked), for the AVX-512 VNNI kernels. Rows
// go in panels of 16 (the last one zero-padded); panel p holds rows [16p, 16p + 16) as
//   uint16_t scale[nb][16]          f16 block scales, row r in lane r (region padded to 64 bytes)
//   q8_0: uint8_t q[nb][8][16][4]   group g (elements 4g..4g+3) of row r at [b][g][r]: w + 128
//   q4_0: uint8_t q[nb][4][16][4]   byte i of [b][j][r]: low nibble element 4j + i (group j),
//                                   high nibble element 16 + 4j + i (group j + 4), as stored (w + 8)
// so one 64-byte vector is one group of 16 rows: a u8 x s8 dot product against the token's 4
// quantized activations broadcast gives 16 rows' partial dots at once, and a block's 8 groups
// sum in int32 before one float scaling per block, row and token.
constexpr size_t kInterleaveRows = 16;
bool InterleavedKernelAvailable();  // the running target has the interleaved kernels
// AVX2 (and AVX-512 without VNNI): the same arrangement in panels of 8 rows, values as stored
// (q8_0 signed; q4_0 nibbles w + 8), so one 32-byte vector is one group of 8 rows for maddubs
// (kernels/quant_panels_avx2-inl.h):
//   uint16_t scale[nb][8]           f16 block scales (region padded to 64 bytes)
//   q8_0: int8_t q[nb][8][8][4]     group g of row r at [b][g][r]
//   q4_0: uint8_t q[nb][4][8][4]    byte i of [b][j][r]: low nibble element 4j + i, high 16 + 4j + i
//   q5_0: the q4_0 bytes of the low four bits of each level + 16, then uint8_t high[nb][8][4]: bit j
//         of byte i of row r is the fifth bit of element 4j + i (160 bytes a block: as stored)
//   q4_1, q5_1, q4_K, q5_K ("level panels", made from the expanded rows below): per 32-value block
//         the q4_0 bytes of each level's low four bits, the fifth bits as q5_0's (5-bit types), then
//         float scale[8] and float min[8] (the expanded row's scale and minimum of the block); no
//         scale region before the blocks.
//   q6_K (a level panel without minimums): the q4_0 bytes of the low four bits of each level + 32
//         (0..63), then two planes uint8_t high[2][8][4]: bits 2j, 2j + 1 of byte i of row r in plane
//         k are bits 4, 5 of element 4 (4k + j) + i, then float scale[2][8] (the expanded row's two
//         scales of the block, one per 16 values).
// These types (and q5_0) are computed from the panels whatever the product (stored rows become
// panels on the fly), so their bits do not depend on the layout they were read from.
constexpr size_t kAvx2PanelRows = 8;
// Bytes of one 32-value block of one row in the level panels (0: not a level-panel type).
constexpr size_t LevelPanelRowBytes(DType type) {
  switch (type) {
    case DType::kQ4_1:
    case DType::kQ4_K: return 16 + 8;  // nibbles, scale, min
    case DType::kQ5_1:
    case DType::kQ5_K: return 16 + 4 + 8;  // nibbles, fifth bits, scale, min
    case DType::kQ6_K: return 16 + 8 + 8;  // nibbles, bits 4 and 5, two scales
    default: return 0;
  }
}
// Rows a panel of the running x86 target's interleaved kernels: 16 (AVX-512 VNNI), 8 (AVX2, AVX3),
// 0 (none: other targets, or an Arm build's Highway targets).
size_t X86PanelRows();
// The type is computed from the running x86 target's panels: q8_0 and q4_0 on both kinds, every
// other quantized type on AVX2's (where the VNNI target takes the expanded copy).
inline bool X86PanelType(DType type) {
  if (type == DType::kQ8_0 || type == DType::kQ4_0) return X86PanelRows() > 0;
  return DTypeIsQuantized(type) && X86PanelRows() == kAvx2PanelRows;
}
// The level of each value carries a fifth bit (a plane of its own in the AVX2 panels).
constexpr bool HasFifthBit(DType type) {
  return type == DType::kQ5_0 || type == DType::kQ5_1 || type == DType::kQ5_K;
}
// Bytes of one block's values for the panel's 16 rows (the block minus its scale, 16 times).
constexpr size_t InterleavedBlockBytes(DType type) {
  return kInterleaveRows * (DTypeBlockBytes(type) - kQuantBlockScaleBytes);
}
size_t InterleavedPanelBytes(DType type, size_t cols);
inline size_t InterleavedScaleBytes(size_t cols) {  // nb * 16 f16 scales, padded to 64 bytes
  return (cols / kQuantBlockValues * kInterleaveRows * 2 + 63) / 64 * 64;
}

// Arm dot-product panels (kernels/matmul_arm_dot.cpp, when the CPU has sdot / vsdot): the same
// arrangement with 4 rows per panel, f32 scales and signed values, so one 16-byte vector is one
// group of 4 rows for a by-element sdot against the token's group g:
//   float   scale[nb][rows]         block scales widened exactly from f16 (region padded to 64)
//   q8_0: int8_t q[nb][8][4][4]     group g of row r at [b][g][r], as stored
//   q4_0, AArch32: uint8_t q[nb][4][4][4]  as the interleave above, each nibble stored as
//                                   (w + 8) ^ 8 (w in 4-bit two's complement: shifted left 4 it is
//                                   the int8 16 * w)
//   q4_0, aarch64: 8 rows a panel ("paired"), uint8_t q[nb][8][4][4]: byte i of [b][g][r] (r < 4)
//                                   holds element 4g + i of row r in its low nibble, as stored
//                                   (w + 8), and of row r + 4 in its high nibble, as w in 4-bit two's
//                                   complement: as an int8 the byte is 16 * w_{r+4} + (w_r + 8), so
//                                   one sdot of the byte and one of the byte shifted right 4 (w_{r+4})
//                                   give both rows' sums: a nibble split per two sdots, not per one
// PanelFormat describes the layout of the running target; the accessors below use it.
constexpr size_t kArmPanelRows = 4;
struct PanelFormat {
  size_t q8_rows;      // rows per panel of q8_0
  size_t q4_rows;      // ... of q4_0
  size_t scale_size;   // bytes per scale: 2 (f16) or 4 (f32)
  uint32_t q8_flip;    // XORed into each 4 bytes of q8_0 values
  uint32_t q4_flip;    // XORed into each 4 bytes of q4_0 values (not paired)
  bool q4_paired;      // q4_0 in the paired 8-row layout above
  size_t rows(DType type) const { return type == DType::kQ4_0 ? q4_rows : q8_rows; }
  size_t scale_bytes(DType type, size_t cols) const {
    if (LevelPanelRowBytes(type) > 0) return 0;  // in each block
    return (cols / kQuantBlockValues * rows(type) * scale_size + 63) / 64 * 64;
  }
  size_t block_bytes(DType type) const {
    if (LevelPanelRowBytes(type) > 0) return rows(type) * LevelPanelRowBytes(type);
    return rows(type) * (DTypeBlockBytes(type) - kQuantBlockScaleBytes);
  }
  size_t panel_bytes(DType type, size_t cols) const {
    return scale_bytes(type, cols) + cols / kQuantBlockValues * block_bytes(type);
  }
};
constexpr PanelFormat Avx2PanelFormat() { return {kAvx2PanelRows, kAvx2PanelRows, 2, 0u, 0u, false}; }
// The layout the running target reads (Arm's where its dot product runs, else the x86 target's).
PanelFormat ActivePanelFormat();
// The Arm dot-product kernels run (Arm builds on CPUs with the dot product; kernels/cpu_features.h
// and SetKernelTarget decide).
bool ArmDotActive();
// ... and multi-token products take aarch64's smmla (i8mm) over the same panels (the NEON_I8MM
// target): the running target's panels are the same with and without it.
bool ArmI8mmActive();
// Some Arm kernel target runs (NEON, with or without the dot product): the expanded-row types take
// the Arm kernels of kernels/arm_kquant-inl.h.
bool ArmNeonActive();
// MatMul on a matrix in the Arm panel layout, row_begin a multiple of its panel rows, a.packed set.
void MatMulArmDot(const KernelMatrix& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                  size_t row_end);

// ---------------------------------------------------------------- the other quantized types
// q4_1, q5_0, q5_1, q4_K, q5_K and q6_K (DTypeIsQ8OrQ4_0 false) are computed from an expanded copy
// made at load (kernels/matmul_kquant_expand.cpp), the same on every target: per row
//   int8_t q[cols]            each value's integer level v as the format defines it, made signed
//                             where the format subtracts a constant (q5_0: v - 16, q6_K: v - 32)
//   float  scale[cols / 16]   the scale of each 16 values (d, d * sc_j; exact products of an f16
//                             and a 6- or 8-bit integer), so x = scale * q + min exactly
//   float  min[cols / 32]     the additive term of each 32 values (q4_1 / q5_1: m, q4_K / q5_K:
//                             -dmin * m_j; 0 for the others)
// MatMulKQuant computes, for each row and token, over the 32-value blocks b of the packed activations
// (dx_b, xq, s_b = sum of the block's xq):
//   y = sum of the float lanes of fold_b fma(float(int32 dot of each 16 values), scale * dx_b, acc)
//       + fold_b fma(min_b, dx_b * s_b, m)
// in an order that depends on neither the batch nor the row slice, so a batch gives the same bits
// as its tokens one at a time and any thread split the same bits as one slice.
constexpr bool UsesExpandedRows(DType t) { return DTypeIsQuantized(t) && !DTypeIsQ8OrQ4_0(t); }
constexpr bool ExpandedHasMins(DType t) {
  return t == DType::kQ4_1 || t == DType::kQ5_1 || t == DType::kQ4_K || t == DType::kQ5_K;
}
// The matrix is computed from the expanded copy (kernels/matmul_kquant.cpp) on the running target:
// the types above, unless the x86 target's panels take them.
inline bool ReadsExpandedRows(DType t) { return UsesExpandedRows(t) && !X86PanelType(t); }
constexpr size_t ExpandedRowBytes(size_t cols) { return cols + cols / 16 * 4 + cols / 32 * 4; }
// Rows [r0, r1) of `w` (a type UsesExpandedRows) into `out` (ExpandedRowBytes(cols) per row).
void ExpandRows(const TensorView& w, size_t r0, size_t r1, uint8_t* out);
// MatMul for those types; reads w.repacked (the expanded copy, from row 0 of w) when set, else
// expands the rows it needs into per-thread scratch (the same bits). Requires a.packed.
void MatMulKQuant(const KernelMatrix& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                  size_t row_end);
// The Arm kernels' fold (kernels/arm_kquant-inl.h) in scalar code, from w.data and a.packed, per row
// and token over blocks b (q6_K: and halves h, a scale each):
//   acc = fma(float(int32 dot), scale * dx_b, acc); then, with minimums, acc = fma(min_b, t_b, acc)
// from 0, t_b = dx_b * s_b. MatMul on Arm equals it bit for bit (tests; every build has it).
void MatMulKQuantArmReference(const KernelMatrix& w, const Activations& a, float* y, size_t y_stride,
                              size_t row_begin, size_t row_end);
// MatMul on these types runs the Arm kernels (an Arm build on a target with NEON compiled in).
bool ArmKQuantActive();
// t[b] = dx_b * s_b of one token's packed record, as the Arm kernels and their reference use it.
void KQuantMinWeights(const QuantLayout& layout, const uint8_t* record, float* t);
// One block's t_b = dx_b * s_b from a packed record (s_b from its -128 s_b start): KQuantMinWeights'
// value, for kernels that compute it where they use it.
inline float BlockMinWeight(const uint8_t* record, size_t d8_offset, size_t bsum_offset, size_t b) {
  float dx;
  int32_t start;
  std::memcpy(&dx, record + d8_offset + 32 * b, 4);
  std::memcpy(&start, record + bsum_offset + 8 * b, 4);
  return dx * static_cast<float>(start / -128);
}

// ---------------------------------------------------------------- bf16 weights on bfdot / bfmmla
// On NEON_BF16 (aarch64 with FEAT_BF16, kernels/cpu_features.h) bf16 matrices are repacked into
// panels of 4 rows (kernels/matmul_bf16.cpp) and multiplied with activations rounded to bf16
// (round to nearest even, as BFCVTN with the default FPCR does), by bfdot for one token and bfmmla
// for token pairs (kernels/matmul_arm_bf16.cpp). Layout: each row zero-padded to Bf16PaddedCols
// values; panel p holds rows [4p, 4p + 4) as Bf16PaddedCols / 2 vectors of 16 bytes, vector g =
// pair g (values 2g, 2g + 1) of rows 0, 1, 2, 3: one by-element bfdot against the token's pair g
// gives the 4 rows' next step, and two vectors zipped give bfmmla's 2 rows x 4 values.
// Numerics, per row and token, over the pairs g of the padded row (w_g = values 2g, 2g + 1; x_g the
// token's, in bf16):
//   y = BfDotAdd(... BfDotAdd(BfDotAdd(+0, w_0, x_0), w_1, x_1) ..., w_last, x_last)
// whatever the batch or the row slice: bfmmla chains a 2x2 tile's two pairs in that order too, so
// a batch equals its tokens one at a time and a slice the whole matrix.
constexpr size_t kBf16PanelRows = 4;
constexpr size_t Bf16PaddedCols(size_t cols) { return (cols + 15) / 16 * 16; }
constexpr size_t Bf16PanelBytes(size_t cols) { return kBf16PanelRows * Bf16PaddedCols(cols) * 2; }
// A token's packed activations: Bf16PaddedCols bf16 values (zeros after cols), padded to 64 bytes.
constexpr size_t Bf16RecordBytes(size_t cols) { return (Bf16PaddedCols(cols) * 2 + 63) / 64 * 64; }
// The NEON_BF16 kernels run (SetKernelTarget and kernels/cpu_features.h decide).
bool ArmBf16Active();
// Arm's BFDotAdd with FPCR.EBF = 0 (what BFDOT computes per 32-bit lane, and BFMMLA per step):
// each bf16 product exact (bf16 inputs that are subnormal count as zero), the two products added,
// then the sum added to `sum` (a subnormal `sum` counts as zero), each addition rounded to single
// precision by round-to-odd (the truncated result with its last bit set when inexact), results
// below 2^-126 flushed to a zero of their sign, overflow to infinity, any NaN the default NaN.
// w0 and x0 are the pair's first (lower-addressed) values. Integer arithmetic only: the same bits on
// every build (tests check the instructions against it under qemu).
float BfDotAdd(float sum, uint16_t w0, uint16_t w1, uint16_t x0, uint16_t x1);
// Packs num_tokens rows of x into Bf16RecordBytes(cols) records, each value by util's F32ToBf16
// (round to nearest even, a NaN quietened with its payload's top bits kept: what BFCVT does); the
// scalar reference of the NEON packing that PackActivations runs on NEON_BF16 (the same bytes).
void PackBf16(size_t cols, const float* x, size_t x_stride, size_t num_tokens, uint8_t* out);
// Bytes of the panel copy of a bf16 matrix, 0 unless NEON_BF16 runs; the copy itself.
size_t Bf16PanelWeightBytes(const TensorView& w);
void FillBf16Panels(const TensorView& w, void* out);
// Row r of the panel copy (or of the stored rows without one) as float32.
void LookupBf16Row(const KernelMatrix& w, size_t r, float* out);
// MatMul on a bf16 matrix with its panel copy (w.repacked) on NEON_BF16, from a.packed (bf16
// records; MatMul packs them when the caller did not). Any row_begin.
void MatMulArmBf16(const KernelMatrix& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                   size_t row_end);
// The numerics above in scalar code, from the stored rows (w.data) and bf16 records (a.packed,
// PackBf16's layout). MatMul on NEON_BF16 equals it bit for bit (tests; every build has it).
void MatMulBf16DotReference(const TensorView& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                            size_t row_end);

// Bytes of the interleaved copy of `w`, or 0 when the running target has no use for one (other
// types, other targets; the types above always have their expanded copy). InterleaveWeights fills
// `out` (64-byte aligned). PrepareWeights makes these copies for a model; tests and the benchmark
// make them directly.
size_t InterleavedWeightBytes(const TensorView& w);
void InterleaveWeights(const TensorView& w, void* out);
// The q8_0/q4_0 panels' definition, row by row (the tests compare InterleaveWeights with it), and
// its rows [first, w.rows) (first a multiple of f's panel rows) into the panels from `dst` on.
void InterleaveWeightsPortable(const TensorView& w, void* out);
void InterleaveRowsPortable(const TensorView& w, const PanelFormat& f, size_t first, uint8_t* dst);
// The whole panels of a q8_0/q4_0 `w` in the Arm layout `f`, filled with NEON; returns the rows it
// filled (a multiple of f's panel rows; 0 off Arm, without NEON or for another layout).
size_t FillArmPanels(const TensorView& w, const PanelFormat& f, uint8_t* dst);
// Reference for the interleaved kernels (tests): the fold of kernels/matmul.h in scalar code, from
// w.data and a.packed. Bit-identical to MatMul on interleaved weights.
void MatMulInterleavedReference(const TensorView& w, const Activations& a, float* y, size_t y_stride,
                                size_t row_begin, size_t row_end);

}  // namespace fgemma::kernels_internal
