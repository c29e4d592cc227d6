// Int8 dot-product kernels for Arm (sdot on aarch64, vsdot on AArch32) over the 4-row panels of
// kernels/matmul_internal.h. Their translation unit is compiled for ARMv8.2-A + dotprod and must
// only run when the CPU has it (kernels/cpu_features.h), so it skips the precompiled header and
// this interface uses no C++ library
// types: nothing inline from a shared header may be instantiated there with the newer ISA.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fgemma::kernels_internal {

struct ArmDotJob {
  const uint8_t* panels = nullptr;  // the panel holding output row 0
  size_t panel_bytes = 0;
  size_t scale_bytes = 0;           // offset of the values in a panel
  size_t blocks = 0;                // cols / 32
  bool q4 = false;                  // q4_0 (else q8_0; on aarch64 in 8-row paired panels, matmul_internal.h)
  const uint8_t* packed = nullptr;  // QuantLayout records
  size_t packed_stride = 0;
  size_t d8_offset = 0;
  size_t bsum_offset = 0;           // per block {-128 s_b, -8 s_b} (aarch64 q4_0: the -8 correction)
  size_t tokens = 0;
  float* y = nullptr;  // output row 0 of token 0
  size_t y_stride = 0;
  size_t rows = 0;     // outputs per token (the last panel may be partial)
};
// Defined only in builds for Arm (FGEMMA_ARM_DOT).
void ArmDotMatMul(const ArmDotJob& job);
// aarch64's q4_0 (8-row paired panels, kernels/matmul_arm_dot_q4.cpp); ArmDotMatMul
// calls it. Defined only in aarch64 builds.
void ArmDotPairedQ4MatMul(const ArmDotJob& job);

// smmla (aarch64 i8mm, kernels/matmul_arm_i8mm.cpp): job.tokens must be even. Token pairs are first
// interleaved into `pairs` (ArmI8mmPairBytes(job.blocks, job.tokens) bytes, 16-byte aligned): in
// groups of 4 pairs, per block the pairs' scales, then for each pair 8-byte groups of the two
// tokens' quantized values side by side (the 2x8 operand smmla takes); after them, room for one panel's blocks zipped into smmla
// operands (160 bytes a block; a paired q4_0 panel's 8 rows: twice that). Rows and tokens get the
// bits ArmDotMatMul gives them. Defined only in aarch64 builds (FGEMMA_ARM_I8MM).
inline size_t ArmI8mmPairBytes(size_t blocks, size_t tokens) { return tokens / 2 * blocks * 80 + blocks * 320; }
void ArmI8mmMatMul(const ArmDotJob& job, uint8_t* pairs);

// The expanded rows of q4_1, q5_0, q5_1, q4_K, q5_K and q6_K (kernels/matmul_internal.h) on Arm
// (kernels/arm_kquant-inl.h): groups of 4 rows, each 16 values' int32 dot by sdot / vsdot
// (ArmKQuantDotMatMul, the dot-product targets) or by widening multiplies (ArmKQuantNeonMatMul,
// NEON without the dot product), then per row and token the fold of MatMulKQuantArmReference.
struct ArmKQuantJob {
  const uint8_t* rows = nullptr;    // expanded row of output row 0
  size_t row_bytes = 0;             // ExpandedRowBytes(cols)
  size_t cols = 0;
  size_t blocks = 0;                // cols / 32
  const uint8_t* packed = nullptr;  // QuantLayout records
  size_t packed_stride = 0;
  size_t d8_offset = 0;
  const float* min_weights = nullptr;  // [tokens][blocks] dx_b * s_b; null: the type has no minimums
  bool split_scales = false;           // a scale per 16 values (q6_K); else one a block (both copies equal)
  size_t tokens = 0;
  float* y = nullptr;  // output row 0 of token 0
  size_t y_stride = 0;
  size_t rows_count = 0;
};
// Defined in Arm builds (FGEMMA_ARM_DOT); the NEON one only where the baseline has NEON.
void ArmKQuantDotMatMul(const ArmKQuantJob& job);
void ArmKQuantNeonMatMul(const ArmKQuantJob& job);
// smmla over row pairs x token pairs, the sdot tile for a last single token (aarch64 builds,
// FGEMMA_ARM_I8MM; kernels/matmul_arm_kquant_i8mm.cpp): the same bits.
void ArmKQuantI8mmMatMul(const ArmKQuantJob& job);

// bf16 weights in 4-row panels on bf16 activations (aarch64 FEAT_BF16, kernels/matmul_arm_bf16.cpp,
// layout and numerics in matmul_internal.h): bfdot for single tokens, bfmmla for token pairs (token
// pairs are first interleaved into a 64 KiB scratch on the stack, as many at a time as it holds). Output row i of
// panel 0 (i = 0 .. 4 * panels - 1) is y[i - skip] when skip <= i < skip + rows. Defined only in
// aarch64 builds (FGEMMA_ARM_BF16).
struct ArmBf16Job {
  const uint8_t* panels = nullptr;  // the panel holding the first output row
  size_t panel_bytes = 0;
  size_t pairs = 0;                 // padded cols / 2 (a multiple of 8)
  const uint8_t* packed = nullptr;  // bf16 records (Bf16RecordBytes)
  size_t packed_stride = 0;
  size_t tokens = 0;
  float* y = nullptr;  // output row_begin of token 0
  size_t y_stride = 0;
  size_t skip = 0;     // rows of the first panel before row_begin (0-3)
  size_t rows = 0;     // outputs per token
};
void ArmBf16MatMul(const ArmBf16Job& job);
// PackBf16's records by BFCVTN (the same bytes).
void ArmBf16Pack(size_t cols, const float* x, size_t x_stride, size_t num_tokens, uint8_t* out);

}  // namespace fgemma::kernels_internal
