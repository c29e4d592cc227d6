// smmla (i8mm) kernels for aarch64 over the dot-product panels of matmul_internal.h (q8_0: 4 rows;
// q4_0: 8 paired rows), for products of two or more tokens (prefill, batches). Compiled with
// -march=armv8.2-a+dotprod+i8mm (src/CMakeLists.txt) and called only on the NEON_I8MM target
// (kernels/cpu_features.h).
//
// smmla multiplies a 2x8 int8 matrix (two rows' 8 consecutive values) by the transpose of another
// (two tokens' 8 values) into a 2x2 int32 tile. The panels keep the sdot layout (group g of 4 values
// of rows 0-3 in one vector: the decode kernel needs it, and a second copy would double the
// weights' memory); two groups zipped in registers give the rows' 8-value operands, once per block
// for 8 tokens, or once per panel into a scratch when more than 8 tokens pass over it (a paired
// q4_0 panel always: its nibbles split once into two 4-row scratch panels). Per row and token the
// block's int32 dot is exact whatever the order of its products, and the float steps are those of
// matmul_arm_dot.cpp:
//   y = fold over blocks b: y = fma(float(int32 dot_b), float(dw_b * dx_b), y), from 0,
// so a batch equals one token at a time (whose single tokens take sdot), and a row slice the whole.
#include "kernels/arm_dot_common.h"
#include "kernels/matmul_arm_dot.h"

#if defined(FGEMMA_ARM_I8MM)
#include <arm_neon.h>

namespace fgemma::kernels_internal {
namespace {

// Token pairs per pass over a panel: 8 zipped weights + 8 tile sums + 4 activations + 4 pair
// scales in registers (no spills with GCC 12; 5 pairs would need more than 32 registers). The pair
// layout below groups pairs by the same count, so both q8_0 and q4_0 passes use this one constant.
constexpr size_t kPairs = 4;

// The pairs are cut into groups of kPairs (the last group may be smaller: n pairs), each group
// stored whole before the next (group G from pair kPairs * G: at kPairs * G * blocks * 80 bytes), so
// one pointer walks a pass over it with post-indexed loads only. Per block a group holds its pairs'
// scales first, {dx_t0, dx_t1, dx_t0, dx_t1} for each pair j (the lanes of a 2x2 tile {r0t0, r0t1,
// r1t0, r1t1}: 16 n bytes), then for each pair 4 vectors {t0 values 8c..8c+7, t1 values 8c..8c+7}
// (c = 0..3: 64 n bytes).
void InterleavePairs(const ArmDotJob& job, uint8_t* pairs) {
  const size_t npairs = job.tokens / 2;
  for (size_t j = 0; j < npairs; ++j) {
    const size_t g0 = j / kPairs * kPairs;
    const size_t n = npairs - g0 < kPairs ? npairs - g0 : kPairs;
    uint8_t* group = pairs + g0 * job.blocks * 80;
    const uint8_t* r0 = job.packed + 2 * j * job.packed_stride;
    const uint8_t* r1 = r0 + job.packed_stride;
    const int8_t* x0 = reinterpret_cast<const int8_t*>(r0);
    const int8_t* x1 = reinterpret_cast<const int8_t*>(r1);
    for (size_t b = 0; b < job.blocks; ++b) {
      uint8_t* block = group + b * n * 80;
      int8_t* out = reinterpret_cast<int8_t*>(block + n * 16 + 64 * (j - g0));
      const int64x2_t a0 = vreinterpretq_s64_s8(vld1q_s8(x0 + 32 * b)), a1 = vreinterpretq_s64_s8(vld1q_s8(x0 + 32 * b + 16));
      const int64x2_t b0 = vreinterpretq_s64_s8(vld1q_s8(x1 + 32 * b)), b1 = vreinterpretq_s64_s8(vld1q_s8(x1 + 32 * b + 16));
      vst1q_s8(out, vreinterpretq_s8_s64(vzip1q_s64(a0, b0)));
      vst1q_s8(out + 16, vreinterpretq_s8_s64(vzip2q_s64(a0, b0)));
      vst1q_s8(out + 32, vreinterpretq_s8_s64(vzip1q_s64(a1, b1)));
      vst1q_s8(out + 48, vreinterpretq_s8_s64(vzip2q_s64(a1, b1)));
      float d[4];
      __builtin_memcpy(&d[0], r0 + job.d8_offset + 32 * b, 4);
      __builtin_memcpy(&d[1], r1 + job.d8_offset + 32 * b, 4);
      d[2] = d[0];
      d[3] = d[1];
      __builtin_memcpy(block + 16 * (j - g0), d, 16);
    }
  }
}

// Block b of a q8_0 panel as smmla operands, moving `q` past it: lo[c] = rows 0-1, hi[c] = rows
// 2-3, values 8c..8c+7. Lanes of group vector g are rows 0-3 of group g: zipping groups 2c and
// 2c + 1 gives row r's values 8c..8c+7 in 8 consecutive bytes, two rows per vector.
inline void LoadTiles(const uint8_t*& q, int8x16_t lo[4], int8x16_t hi[4]) {
  const int8x16x4_t l = Load64(q), h = Load64(q);
  const int8x16_t w[8] = {l.val[0], l.val[1], l.val[2], l.val[3], h.val[0], h.val[1], h.val[2], h.val[3]};
  for (int c = 0; c < 4; ++c) {
    const int32x4_t a = vreinterpretq_s32_s8(w[2 * c]), n = vreinterpretq_s32_s8(w[2 * c + 1]);
    lo[c] = vreinterpretq_s8_s32(vzip1q_s32(a, n));
    hi[c] = vreinterpretq_s8_s32(vzip2q_s32(a, n));
  }
}

// One panel x kP token pairs starting at pair j0: out[2k + t] = rows 0-3 of token 2 (j0 + k) + t.
// Sums stay local (through `out` they would be stored every block), in the 2x2 tile form smmla
// gives: the scales are made in that form too ({dw_r0, dw_r0, dw_r1, dw_r1} x {dx_t0, dx_t1, dx_t0,
// dx_t1}: the same float products dw_r * dx_t), and the tiles are unzipped to rows once at the end.
// Block b's operands of a panel zipped once into `zipped` (ZipPanel: lo[4], hi[4], then the scales
// as {dw_r0, dw_r0, dw_r1, dw_r1}, {dw_r2, dw_r2, dw_r3, dw_r3}: 160 bytes per block), for products
// that pass over a panel more than once (more than kPairs token pairs): each pass then loads them
// with 3 instructions instead of zipping (and unpacking q4_0) again. (Zipping within the first pass
// instead, storing as it goes, was more instructions with GCC 12: 11.29M against 11.11M per q8_0
// prefill token.)
constexpr size_t kZippedBlockBytes = 160;
void ZipPanel(const ArmDotJob& job, const uint8_t* panel, uint8_t* zipped) {
  const uint8_t* q = panel + job.scale_bytes;
  const uint8_t* scales = panel;
  for (size_t b = 0; b < job.blocks; ++b, zipped += kZippedBlockBytes) {
    int8x16_t lo[4], hi[4];
    LoadTiles(q, lo, hi);
    const float32x4_t dw = LoadF32(scales);
    const int8x16x4_t l = {{lo[0], lo[1], lo[2], lo[3]}}, h = {{hi[0], hi[1], hi[2], hi[3]}};
    const float32x4x2_t s = {{vzip1q_f32(dw, dw), vzip2q_f32(dw, dw)}};
    vst1q_s8_x4(reinterpret_cast<int8_t*>(zipped), l);  // (clang's intrinsics are macros: no braces inside)
    vst1q_s8_x4(reinterpret_cast<int8_t*>(zipped + 64), h);
    vst1q_f32_x2(reinterpret_cast<float*>(zipped + 128), s);
  }
}

// A paired q4_0 panel (8 rows, matmul_internal.h) zipped as two 4-row panels: rows 0-3 at
// `zipped`, rows 4-7 at zipped + blocks * kZippedBlockBytes, each as ZipPanel writes it. Group
// vectors 2c and 2c + 1 zipped give rows r and r + 4 (r = 0, 1: the first zip; 2, 3: the second)
// values 8c..8c+7, one nibble each: the low one masked less 8 is w_r, the high one shifted right 4
// (arithmetic) w_{r+4}. Always zipped once, then passed over: its nibbles are split once per
// product, however many token pairs pass.
void ZipPairedPanel(const ArmDotJob& job, const uint8_t* panel, uint8_t* zipped) {
  const uint8_t* q = panel + job.scale_bytes;
  const uint8_t* scales = panel;
  uint8_t* upper = zipped + job.blocks * kZippedBlockBytes;
  const int8x16_t low_mask = vdupq_n_s8(0x0F), eight = vdupq_n_s8(8);
  for (size_t b = 0; b < job.blocks; ++b, zipped += kZippedBlockBytes, upper += kZippedBlockBytes) {
    const int8x16x4_t v0 = Load64(q), v1 = Load64(q);
    const int8x16_t w[8] = {v0.val[0], v0.val[1], v0.val[2], v0.val[3], v1.val[0], v1.val[1], v1.val[2], v1.val[3]};
    int8x16x4_t lo, hi, lo4, hi4;  // rows 0-1, 2-3, 4-5, 6-7
    for (int c = 0; c < 4; ++c) {
      const int32x4_t a = vreinterpretq_s32_s8(w[2 * c]), n = vreinterpretq_s32_s8(w[2 * c + 1]);
      const int8x16_t z1 = vreinterpretq_s8_s32(vzip1q_s32(a, n)), z2 = vreinterpretq_s8_s32(vzip2q_s32(a, n));
      lo.val[c] = vsubq_s8(vandq_s8(z1, low_mask), eight);
      hi.val[c] = vsubq_s8(vandq_s8(z2, low_mask), eight);
      lo4.val[c] = vshrq_n_s8(z1, 4);
      hi4.val[c] = vshrq_n_s8(z2, 4);
    }
    const float32x4x2_t dw = LoadF32x2(scales);
    const float32x4x2_t s0 = {{vzip1q_f32(dw.val[0], dw.val[0]), vzip2q_f32(dw.val[0], dw.val[0])}};
    const float32x4x2_t s1 = {{vzip1q_f32(dw.val[1], dw.val[1]), vzip2q_f32(dw.val[1], dw.val[1])}};
    vst1q_s8_x4(reinterpret_cast<int8_t*>(zipped), lo);
    vst1q_s8_x4(reinterpret_cast<int8_t*>(zipped + 64), hi);
    vst1q_f32_x2(reinterpret_cast<float*>(zipped + 128), s0);
    vst1q_s8_x4(reinterpret_cast<int8_t*>(upper), lo4);
    vst1q_s8_x4(reinterpret_cast<int8_t*>(upper + 64), hi4);
    vst1q_f32_x2(reinterpret_cast<float*>(upper + 128), s1);
  }
}

// `src` is the panel (kZipped false) or its ZipPanel copy.
template <bool kZipped, size_t kP>
void Tile(const ArmDotJob& job, const uint8_t* src, const uint8_t* pairs, size_t j0, float32x4_t* out) {
  float32x4_t acc01[kP], acc23[kP];
  for (size_t k = 0; k < kP; ++k) acc01[k] = acc23[k] = vdupq_n_f32(0.0f);
  const uint8_t* x = pairs + job.blocks * 80 * j0;  // this group's first block: scales, then values
  const uint8_t* q = kZipped ? src : src + job.scale_bytes;
  const uint8_t* scales = src;
  for (size_t b = job.blocks; b != 0; --b) {
    int8x16_t lo[4], hi[4];
    float32x4_t dw01, dw23;
    if constexpr (kZipped) {
      const int8x16x4_t l = Load64(q), h = Load64(q);
      for (int c = 0; c < 4; ++c) {
        lo[c] = l.val[c];
        hi[c] = h.val[c];
      }
      const float32x4x2_t d = LoadF32x2(q);
      dw01 = d.val[0];
      dw23 = d.val[1];
    } else {
      LoadTiles(q, lo, hi);
      const float32x4_t dw = LoadF32(scales);
      dw01 = vzip1q_f32(dw, dw);
      dw23 = vzip2q_f32(dw, dw);
    }
    float32x4_t dxs[kP];  // the pairs' scales: one load for 4 pairs
    if constexpr (kP == 4) {
      const float32x4x4_t v = LoadF32x4(x);
      for (size_t k = 0; k < 4; ++k) dxs[k] = v.val[k];
    } else {
      for (size_t k = 0; k < kP; ++k) dxs[k] = LoadF32(x);
    }
    for (size_t k = 0; k < kP; ++k) {
      const int8x16x4_t xv = Load64(x);
      const float32x4_t d = dxs[k];
      int32x4_t c01 = vmmlaq_s32(vdupq_n_s32(0), lo[0], xv.val[0]);  // {r0t0, r0t1, r1t0, r1t1}
      int32x4_t c23 = vmmlaq_s32(vdupq_n_s32(0), hi[0], xv.val[0]);  // rows 2-3
      for (int c = 1; c < 4; ++c) {
        c01 = vmmlaq_s32(c01, lo[c], xv.val[c]);
        c23 = vmmlaq_s32(c23, hi[c], xv.val[c]);
      }
      acc01[k] = vfmaq_f32(acc01[k], vcvtq_f32_s32(c01), vmulq_f32(dw01, d));
      acc23[k] = vfmaq_f32(acc23[k], vcvtq_f32_s32(c23), vmulq_f32(dw23, d));
    }
  }
  for (size_t k = 0; k < kP; ++k) {  // {r0t0, r0t1, r1t0, r1t1}, {r2t0, ...} -> rows 0-3 of t0, of t1
    out[2 * k] = vreinterpretq_f32_u32(vuzp1q_u32(vreinterpretq_u32_f32(acc01[k]), vreinterpretq_u32_f32(acc23[k])));
    out[2 * k + 1] = vreinterpretq_f32_u32(vuzp2q_u32(vreinterpretq_u32_f32(acc01[k]), vreinterpretq_u32_f32(acc23[k])));
  }
}

template <bool kZipped, size_t kP>
void TileAndStore(const ArmDotJob& job, size_t panel, const uint8_t* src, const uint8_t* pairs, size_t j0) {
  float32x4_t acc[2 * kP];
  Tile<kZipped, kP>(job, src, pairs, j0, acc);
  const size_t r0 = 4 * panel, n = job.rows - r0 < 4 ? job.rows - r0 : 4;
  for (size_t i = 0; i < 2 * kP; ++i) {
    float* y = job.y + (2 * j0 + i) * job.y_stride + r0;
    if (n == 4) {
      vst1q_f32(y, acc[i]);
    } else {
      float out[4];
      vst1q_f32(out, acc[i]);
      for (size_t r = 0; r < n; ++r) y[r] = out[r];
    }
  }
}

template <bool kZipped>
void Passes(const ArmDotJob& job, size_t p, const uint8_t* src, const uint8_t* pairs) {
  const size_t npairs = job.tokens / 2;
  size_t j = 0;
  for (; j + kPairs <= npairs; j += kPairs) TileAndStore<kZipped, kPairs>(job, p, src, pairs, j);
  switch (npairs - j) {
    case 3: TileAndStore<kZipped, 3>(job, p, src, pairs, j); break;
    case 2: TileAndStore<kZipped, 2>(job, p, src, pairs, j); break;
    case 1: TileAndStore<kZipped, 1>(job, p, src, pairs, j); break;
    default: break;
  }
}

void RunPaired(const ArmDotJob& job, const uint8_t* pairs, uint8_t* zipped) {
  const size_t panels = (job.rows + 7) / 8;
  for (size_t p = 0; p < panels; ++p) {
    ZipPairedPanel(job, job.panels + p * job.panel_bytes, zipped);
    Passes<true>(job, 2 * p, zipped, pairs);
    if (8 * p + 4 < job.rows) Passes<true>(job, 2 * p + 1, zipped + job.blocks * kZippedBlockBytes, pairs);
  }
}

void Run(const ArmDotJob& job, const uint8_t* pairs, uint8_t* zipped) {
  const size_t panels = (job.rows + 3) / 4;
  const bool rezip = job.tokens / 2 > kPairs;  // more than one pass per panel
  for (size_t p = 0; p < panels; ++p) {
    const uint8_t* panel = job.panels + p * job.panel_bytes;
    if (rezip) {
      ZipPanel(job, panel, zipped);
      Passes<true>(job, p, zipped, pairs);
    } else {
      Passes<false>(job, p, panel, pairs);
    }
  }
}

}  // namespace

void ArmI8mmMatMul(const ArmDotJob& job, uint8_t* pairs) {
  InterleavePairs(job, pairs);
  uint8_t* zipped = pairs + job.tokens / 2 * job.blocks * 80;
  if (job.q4) {  // paired panels on aarch64
    RunPaired(job, pairs, zipped);
  } else {
    Run(job, pairs, zipped);
  }
}

}  // namespace fgemma::kernels_internal
#endif  // FGEMMA_ARM_I8MM
