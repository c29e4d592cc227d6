// bf16 weights on bf16 activations with aarch64's bf16 dot products (FEAT_BF16): bfdot for a single
// token, bfmmla for token pairs, over the 4-row panels of matmul_internal.h. Compiled with
// -march=armv8.2-a+bf16 (src/CMakeLists.txt) and called only on the NEON_BF16 target
// (kernels/cpu_features.h).
//
// Every (row, token) output is one chain of BfDotAdd steps over the row's pairs in order, from +0
// (MatMulBf16DotReference):
//   - bfdot by element: lane r of the accumulator is row r of the panel; vector g of the panel (pair g
//     of the 4 rows) against the token's pair g broadcast, g = 0, 1, 2, ...: one step per instruction;
//   - bfmmla: a 2x2 tile (2 rows x 2 tokens) takes 4 values (two pairs) of each row and token and
//     chains the two pairs in order into each element (the Arm ARM's BFMatMulAdd; qemu's
//     gvec_bfmmla), chunk c = values 4c..4c+3 after chunk c - 1: the same steps in the same order.
// So a batch equals its tokens one at a time (odd last tokens take bfdot) and any row slice the
// whole matrix; nothing else is rounded (no horizontal sums, no scales).
#include "kernels/arm_dot_common.h"
#include "kernels/matmul_arm_dot.h"
#include "kernels/matmul_internal.h"

#if defined(FGEMMA_ARM_BF16)
#include <arm_neon.h>

#include <cstring>

namespace fgemma::kernels_internal {
namespace {

inline bfloat16x8_t Bf(int8x16_t v) { return vreinterpretq_bf16_s8(v); }

// Writes lanes 0-3 (panel rows 4 p .. 4 p + 3) of token t's outputs that lie in the job's rows.
inline void StoreRows(const ArmBf16Job& job, size_t p, size_t t, float32x4_t v) {
  float* y = job.y + t * job.y_stride;
  const size_t i0 = 4 * p;
  if (i0 >= job.skip && i0 + 4 <= job.skip + job.rows) {
    vst1q_f32(y + (i0 - job.skip), v);
    return;
  }
  float o[4];
  vst1q_f32(o, v);
  for (size_t i = i0; i < i0 + 4; ++i) {
    if (i >= job.skip && i < job.skip + job.rows) y[i - job.skip] = o[i - i0];
  }
}

// One token x kP panels (4 kP rows): per block of 16 values the token's 8 pairs are loaded once and
// each panel's 8 vectors take 8 by-element bfdots (one chain per row).
template <size_t kP>
void OneToken(const ArmBf16Job& job, size_t p0, size_t t, float32x4_t* out) {
  const uint8_t* q[kP];
  float32x4_t acc[kP];
  for (size_t p = 0; p < kP; ++p) {
    q[p] = job.panels + (p0 + p) * job.panel_bytes;
    acc[p] = vdupq_n_f32(0.0f);
  }
  const uint8_t* xp = job.packed + t * job.packed_stride;
  for (size_t b = job.pairs / 8; b != 0; --b) {
    const int8x16x2_t x = Load32(xp);
    const bfloat16x8_t x0 = Bf(x.val[0]), x1 = Bf(x.val[1]);
#pragma GCC unroll 8
    for (size_t p = 0; p < kP; ++p) {
      const int8x16x4_t lo = Load64(q[p]), hi = Load64(q[p]);
      float32x4_t a = acc[p];
      a = vbfdotq_laneq_f32(a, Bf(lo.val[0]), x0, 0);
      a = vbfdotq_laneq_f32(a, Bf(lo.val[1]), x0, 1);
      a = vbfdotq_laneq_f32(a, Bf(lo.val[2]), x0, 2);
      a = vbfdotq_laneq_f32(a, Bf(lo.val[3]), x0, 3);
      a = vbfdotq_laneq_f32(a, Bf(hi.val[0]), x1, 0);
      a = vbfdotq_laneq_f32(a, Bf(hi.val[1]), x1, 1);
      a = vbfdotq_laneq_f32(a, Bf(hi.val[2]), x1, 2);
      acc[p] = vbfdotq_laneq_f32(a, Bf(hi.val[3]), x1, 3);
    }
  }
  for (size_t p = 0; p < kP; ++p) out[p] = acc[p];  // sums stay local (see PairTile)
}

template <size_t kP>
void OneTokenAndStore(const ArmBf16Job& job, size_t p0, size_t t) {
  float32x4_t acc[kP];
  OneToken<kP>(job, p0, t, acc);
  for (size_t p = 0; p < kP; ++p) StoreRows(job, p0 + p, t, acc[p]);
}

// Token pairs side by side for bfmmla, in groups of kPairTile pairs (the last group smaller), each
// group whole before the next so that one pointer walks a pass over it: group G (pairs j0 = G kPairTile
// .. j0 + n - 1) starts at j0 * pairs * 8 bytes and holds per block of 16 values, for each of its
// pairs j, 4 vectors, vector c = {token 2j values 4c..4c+3, token 2j + 1 values 4c..4c+3}.
constexpr size_t kPairTile = 8;  // 16 tile sums + 8 row operands + 4 token vectors: 28 registers

void InterleavePairs(const ArmBf16Job& job, uint8_t* out) {
  const size_t npairs = job.tokens / 2, blocks = job.pairs / 8;
  for (size_t j = 0; j < npairs; ++j) {
    const size_t j0 = j / kPairTile * kPairTile;
    const size_t n = npairs - j0 < kPairTile ? npairs - j0 : kPairTile;
    const uint8_t* r0 = job.packed + 2 * j * job.packed_stride;
    const uint8_t* r1 = r0 + job.packed_stride;
    uint8_t* o = out + j0 * job.pairs * 8 + (j - j0) * 64;
    for (size_t b = 0; b < blocks; ++b) {
      const int64x2_t a0 = vld1q_s64(reinterpret_cast<const int64_t*>(r0 + 32 * b));
      const int64x2_t a1 = vld1q_s64(reinterpret_cast<const int64_t*>(r0 + 32 * b + 16));
      const int64x2_t b0 = vld1q_s64(reinterpret_cast<const int64_t*>(r1 + 32 * b));
      const int64x2_t b1 = vld1q_s64(reinterpret_cast<const int64_t*>(r1 + 32 * b + 16));
      int64_t* d = reinterpret_cast<int64_t*>(o + 64 * n * b);
      vst1q_s64(d, vzip1q_s64(a0, b0));
      vst1q_s64(d + 2, vzip2q_s64(a0, b0));
      vst1q_s64(d + 4, vzip1q_s64(a1, b1));
      vst1q_s64(d + 6, vzip2q_s64(a1, b1));
    }
  }
}

// One panel x the kT token pairs of a group: per block the panel's 8 vectors are zipped once into the
// rows' bfmmla operands (zip1 of vectors 2c and 2c + 1: rows 0-1, values 4c..4c+3; zip2: rows 2-3)
// for the kT pairs. Sums stay local ({r0 t0, r0 t1, r1 t0, r1 t1}; through `out` they would be
// stored every block).
template <size_t kT>
void PairTile(const ArmBf16Job& job, const uint8_t* panel, const uint8_t* group, float32x4_t (*out)[kT]) {
  float32x4_t acc[2][kT];
  for (size_t t = 0; t < kT; ++t) acc[0][t] = acc[1][t] = vdupq_n_f32(0.0f);
  const uint8_t* q = panel;
  const uint8_t* xp = group;
  for (size_t b = job.pairs / 8; b != 0; --b) {
    const int8x16x4_t lo = Load64(q), hi = Load64(q);
    const int32x4_t g[8] = {vreinterpretq_s32_s8(lo.val[0]), vreinterpretq_s32_s8(lo.val[1]),
                            vreinterpretq_s32_s8(lo.val[2]), vreinterpretq_s32_s8(lo.val[3]),
                            vreinterpretq_s32_s8(hi.val[0]), vreinterpretq_s32_s8(hi.val[1]),
                            vreinterpretq_s32_s8(hi.val[2]), vreinterpretq_s32_s8(hi.val[3])};
    bfloat16x8_t w01[4], w23[4];
    for (int c = 0; c < 4; ++c) {
      w01[c] = vreinterpretq_bf16_s32(vzip1q_s32(g[2 * c], g[2 * c + 1]));
      w23[c] = vreinterpretq_bf16_s32(vzip2q_s32(g[2 * c], g[2 * c + 1]));
    }
#pragma GCC unroll 8
    for (size_t t = 0; t < kT; ++t) {
      const int8x16x4_t x = Load64(xp);
      for (int c = 0; c < 4; ++c) {
        acc[0][t] = vbfmmlaq_f32(acc[0][t], w01[c], Bf(x.val[c]));
        acc[1][t] = vbfmmlaq_f32(acc[1][t], w23[c], Bf(x.val[c]));
      }
    }
  }
  for (size_t t = 0; t < kT; ++t) {
    out[0][t] = acc[0][t];
    out[1][t] = acc[1][t];
  }
}

template <size_t kT>
void PairTileAndStore(const ArmBf16Job& job, size_t p, const uint8_t* pairs, size_t j0) {
  float32x4_t acc[2][kT];
  PairTile<kT>(job, job.panels + p * job.panel_bytes, pairs + j0 * job.pairs * 8, acc);
  for (size_t t = 0; t < kT; ++t) {
    StoreRows(job, p, 2 * (j0 + t), vuzp1q_f32(acc[0][t], acc[1][t]));      // rows 0-3 of token 2 (j0 + t)
    StoreRows(job, p, 2 * (j0 + t) + 1, vuzp2q_f32(acc[0][t], acc[1][t]));  // ... of the next token
  }
}

constexpr size_t kDecodePanels = 8;  // 32 rows per pass: the token's block is loaded once for them
constexpr size_t kPairScratchBytes = 64 * 1024;

}  // namespace

void ArmBf16MatMul(const ArmBf16Job& job) {
  const size_t panels = (job.skip + job.rows + 3) / 4;
  // Token pairs are zipped into a scratch on the stack (no allocation, on any thread), as many pairs
  // at a time as it holds (2048 columns: 8 pairs; 640: 25); rows longer than it holds a pair of
  // (over 16,384 columns) take bfdot for every token: the same bits either way.
  alignas(16) uint8_t scratch[kPairScratchBytes];
  const size_t npairs = job.tokens / 2;
  const size_t per_chunk = kPairScratchBytes / (job.pairs * 8);
  size_t paired = 0;  // tokens done by bfmmla
  if (per_chunk > 0) {
    for (size_t c0 = 0; c0 < npairs; c0 += per_chunk) {
      ArmBf16Job chunk = job;
      const size_t m = npairs - c0 < per_chunk ? npairs - c0 : per_chunk;
      chunk.packed = job.packed + 2 * c0 * job.packed_stride;
      chunk.tokens = 2 * m;
      chunk.y = job.y + 2 * c0 * job.y_stride;
      InterleavePairs(chunk, scratch);
      for (size_t p = 0; p < panels; ++p) {
        for (size_t j0 = 0; j0 < m; j0 += kPairTile) {
          switch (m - j0 < kPairTile ? m - j0 : kPairTile) {
            case 1: PairTileAndStore<1>(chunk, p, scratch, j0); break;
            case 2: PairTileAndStore<2>(chunk, p, scratch, j0); break;
            case 3: PairTileAndStore<3>(chunk, p, scratch, j0); break;
            case 4: PairTileAndStore<4>(chunk, p, scratch, j0); break;
            case 5: PairTileAndStore<5>(chunk, p, scratch, j0); break;
            case 6: PairTileAndStore<6>(chunk, p, scratch, j0); break;
            case 7: PairTileAndStore<7>(chunk, p, scratch, j0); break;
            default: PairTileAndStore<8>(chunk, p, scratch, j0); break;
          }
        }
      }
    }
    paired = 2 * npairs;
  }
  for (size_t t = paired; t < job.tokens; ++t) {  // a single, odd last or unpaired token: bfdot
    size_t p = 0;
    for (; p + kDecodePanels <= panels; p += kDecodePanels) OneTokenAndStore<kDecodePanels>(job, p, t);
    if (p + kDecodePanels / 2 <= panels) {
      OneTokenAndStore<kDecodePanels / 2>(job, p, t);
      p += kDecodePanels / 2;
    }
    for (; p < panels; ++p) OneTokenAndStore<1>(job, p, t);
  }
}

void ArmBf16Pack(size_t cols, const float* x, size_t x_stride, size_t num_tokens, uint8_t* out) {
  const size_t record = Bf16RecordBytes(cols);
  for (size_t t = 0; t < num_tokens; ++t) {
    const float* src = x + t * x_stride;
    uint8_t* rec = out + t * record;
    size_t k = 0;
    for (; k + 8 <= cols; k += 8) {
      const bfloat16x8_t v = vcvtq_high_bf16_f32(vcvtq_low_bf16_f32(vld1q_f32(src + k)), vld1q_f32(src + k + 4));
      vst1q_bf16(reinterpret_cast<bfloat16_t*>(rec + 2 * k), v);
    }
    if (k < cols) {  // the tail through a zero-padded copy
      float tail[8] = {};
      std::memcpy(tail, src + k, (cols - k) * sizeof(float));
      const bfloat16x8_t v = vcvtq_high_bf16_f32(vcvtq_low_bf16_f32(vld1q_f32(tail)), vld1q_f32(tail + 4));
      vst1q_bf16(reinterpret_cast<bfloat16_t*>(rec + 2 * k), v);
      k += 8;
    }
    std::memset(rec + 2 * k, 0, record - 2 * k);
  }
}

}  // namespace fgemma::kernels_internal
#endif  // FGEMMA_ARM_BF16
