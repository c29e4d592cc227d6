// The Arm dot-product panels (layout in matmul_internal.h) filled with NEON at load, a block of a
// whole panel at a time. The portable loop of InterleaveWeightsPortable (matmul_interleave.cpp)
// defines the bytes; this makes the same ones: a row-by-row loop over 4-byte groups cost about
// three guest instructions a weight on aarch64 (0.8G for the 270m's q8_0 matrices, ~0.5 s on a
// 1.8 GHz in-order core before the first call), st4 writes a whole panel's group of four rows in
// one instruction.
#include <cstring>

#include "kernels/matmul_internal.h"
#include "util/float_types.h"

#if defined(__ARM_NEON)
#include <arm_neon.h>
#endif

namespace fgemma {
namespace kernels_internal {

#if defined(__ARM_NEON)
namespace {

constexpr size_t kBlockValuesAt = kQuantBlockScaleBytes;  // a block's values follow its f16 scale

// Block b's scales of the panel's `rows` rows, widened exactly: scale[b][lane].
void FillScales(const uint8_t* const* src, size_t rows, size_t block_bytes, size_t b, uint8_t* scales) {
  for (size_t lane = 0; lane < rows; ++lane) {
    const float d = LoadF16(src[lane] + b * block_bytes);
    std::memcpy(scales + (b * rows + lane) * 4, &d, 4);
  }
}

uint8x16_t Load16(const uint8_t* p) { return vld1q_u8(p); }

// q8_0, 4 rows: groups 0-3 then 4-7, each the four rows' 4-byte groups side by side (st4).
void FillQ8Block(const uint8_t* const* blk, uint8_t* q) {
  for (size_t half = 0; half < 2; ++half) {
    uint32x4x4_t v;
    v.val[0] = vreinterpretq_u32_u8(Load16(blk[0] + kBlockValuesAt + 16 * half));
    v.val[1] = vreinterpretq_u32_u8(Load16(blk[1] + kBlockValuesAt + 16 * half));
    v.val[2] = vreinterpretq_u32_u8(Load16(blk[2] + kBlockValuesAt + 16 * half));
    v.val[3] = vreinterpretq_u32_u8(Load16(blk[3] + kBlockValuesAt + 16 * half));
    vst4q_u32(reinterpret_cast<uint32_t*>(q + 64 * half), v);
  }
}

#if defined(__aarch64__)
// Paired q4_0, 8 rows: lane r's byte holds row r's stored nibble (low) and row r + 4's value w in
// 4-bit two's complement (high: the stored nibble with its top bit flipped). Elements 0-15 are the
// stored bytes' low nibbles, 16-31 their high nibbles.
void FillPairedQ4Block(const uint8_t* const* blk, uint8_t* q) {
  const uint8x16_t flip = vdupq_n_u8(0x80);
  uint32x4x4_t low, high;  // groups 0-3 (elements 0-15), groups 4-7 (elements 16-31)
  for (size_t lane = 0; lane < 4; ++lane) {
    const uint8x16_t lo_row = Load16(blk[lane] + kBlockValuesAt), hi_row = Load16(blk[lane + 4] + kBlockValuesAt);
    // (hi << 4) | (lo & 0x0F), then the high nibble flipped.
    low.val[lane] = vreinterpretq_u32_u8(veorq_u8(vsliq_n_u8(lo_row, hi_row, 4), flip));
    // (hi & 0xF0) | (lo >> 4), then the high nibble flipped.
    high.val[lane] = vreinterpretq_u32_u8(veorq_u8(vsriq_n_u8(hi_row, lo_row, 4), flip));
  }
  vst4q_u32(reinterpret_cast<uint32_t*>(q), low);
  vst4q_u32(reinterpret_cast<uint32_t*>(q + 64), high);
}
#else
// AArch32 q4_0, 4 rows: each row's 16 stored bytes XOR 0x88, groups of 4 side by side (st4).
void FillQ4Block(const uint8_t* const* blk, uint8_t* q) {
  const uint8x16_t flip = vdupq_n_u8(0x88);
  uint32x4x4_t v;
  for (size_t lane = 0; lane < 4; ++lane) v.val[lane] = vreinterpretq_u32_u8(veorq_u8(Load16(blk[lane] + kBlockValuesAt), flip));
  vst4q_u32(reinterpret_cast<uint32_t*>(q), v);
}
#endif

}  // namespace

size_t FillArmPanels(const TensorView& w, const PanelFormat& f, uint8_t* dst) {
  const bool q8 = w.dtype == DType::kQ8_0;
  const size_t rows = f.rows(w.dtype);
  // Only the layout this file writes: the Arm one (f32 scales, no q8 flip; paired q4_0 on aarch64).
  if (f.scale_size != 4 || f.q8_flip != 0 || (!q8 && w.dtype != DType::kQ4_0)) return 0;
#if defined(__aarch64__)
  if (!q8 && (!f.q4_paired || rows != 2 * kArmPanelRows)) return 0;
#else
  if (!q8 && (f.q4_paired || f.q4_flip != 0x88888888u || rows != kArmPanelRows)) return 0;
#endif
  if (q8 && rows != kArmPanelRows) return 0;
  const size_t nb = w.cols / kQuantBlockValues, block_bytes = DTypeBlockBytes(w.dtype);
  const size_t panel_bytes = f.panel_bytes(w.dtype, w.cols), scale_bytes = f.scale_bytes(w.dtype, w.cols);
  const size_t group_bytes = f.block_bytes(w.dtype);
  const size_t whole = w.rows / rows;
  for (size_t p = 0; p < whole; ++p) {
    uint8_t* panel = dst + p * panel_bytes;
    const uint8_t* src[2 * kArmPanelRows];
    for (size_t lane = 0; lane < rows; ++lane) src[lane] = w.row(p * rows + lane);
    // The scale region's padding (to 64 bytes) is zero, as the portable fill leaves it.
    std::memset(panel + nb * rows * 4, 0, scale_bytes - nb * rows * 4);
    for (size_t b = 0; b < nb; ++b) {
      FillScales(src, rows, block_bytes, b, panel);
      const uint8_t* blk[2 * kArmPanelRows];
      for (size_t lane = 0; lane < rows; ++lane) blk[lane] = src[lane] + b * block_bytes;
      uint8_t* q = panel + scale_bytes + b * group_bytes;
#if defined(__aarch64__)
      q8 ? FillQ8Block(blk, q) : FillPairedQ4Block(blk, q);
#else
      q8 ? FillQ8Block(blk, q) : FillQ4Block(blk, q);
#endif
    }
  }
  return whole * rows;
}
#else
size_t FillArmPanels(const TensorView&, const PanelFormat&, uint8_t*) { return 0; }
#endif

}  // namespace kernels_internal
}  // namespace fgemma
