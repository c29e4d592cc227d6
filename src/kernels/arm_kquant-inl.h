// The Arm kernels over the expanded rows of q4_1, q5_0, q5_1, q4_K, q5_K and q6_K (layout in
// kernels/matmul_internal.h), included by one file per instruction set (matmul_arm_kquant.cpp with
// the dot product, matmul_arm_kquant_neon.cpp without): everything here has internal linkage, so
// each file gets its own copy compiled for its own -march.
//
// Rows go in groups of 4 (a partial last group repeats its last row and stores only the real ones).
// Per block of 32 values: each row's int32 dot with the token's quantized activations, as 4 partial
// lanes (sdot, or vmull + vmlal + vpaddl: |level| <= 32 and |xq| <= 127 keep the int16 sums exact),
// pairwise-added to one lane per row, for the whole block (one scale: every type but q6_K) or for
// each half h of 16 values (q6_K, a scale each); then per row lane
//   acc = fma(float(dot), scale * dx_b, acc)       for the block (or for h = 0, 1)
//   acc = fma(min_b, t_b, acc)                     (types with minimums; t_b = dx_b * s_b)
// from acc = 0, the fold of MatMulKQuantArmReference. The integers are exact whatever the
// instructions, and every float step is one rounding per lane, so each (row, token) gets the bits of
// the reference whatever its group, slice or batch.
#pragma once

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/matmul_arm_dot.h"

namespace fgemma::kernels_internal {
namespace {

#if defined(__aarch64__)
constexpr size_t kKQuantTokens = 4;  // tokens a tile: 8 weight vectors + 4 accumulators + temporaries
#else
constexpr size_t kKQuantTokens = 2;  // 16 q registers on AArch32
#endif

// The 16 products of w and x in 4 int32 lanes (any split: only their sum is used).
template <bool kDot>
inline int32x4_t Dot16(int8x16_t w, int8x16_t x) {
  if constexpr (kDot) {
#if defined(__ARM_FEATURE_DOTPROD)
    return vdotq_s32(vdupq_n_s32(0), w, x);
#else
    static_assert(!kDot, "the dot-product kernels need a file compiled with +dotprod");
#endif
  } else {
#if defined(__aarch64__)
    return vpaddlq_s16(vmlal_high_s8(vmull_s8(vget_low_s8(w), vget_low_s8(x)), w, x));
#else
    return vpaddlq_s16(vmlal_s8(vmull_s8(vget_low_s8(w), vget_low_s8(x)), vget_high_s8(w), vget_high_s8(x)));
#endif
  }
}

inline int32x4_t PairSums(int32x4_t a, int32x4_t b) {
#if defined(__aarch64__)
  return vpaddq_s32(a, b);
#else
  return vcombine_s32(vpadd_s32(vget_low_s32(a), vget_high_s32(a)), vpadd_s32(vget_low_s32(b), vget_high_s32(b)));
#endif
}

// Row r's dot in lane r.
template <bool kDot>
inline int32x4_t RowDots(const int8x16_t w[4], int8x16_t x) {
  return PairSums(PairSums(Dot16<kDot>(w[0], x), Dot16<kDot>(w[1], x)), PairSums(Dot16<kDot>(w[2], x), Dot16<kDot>(w[3], x)));
}

// The scales of block b for the 4 rows: sc[h] lane r = scale 2b + h of row r. Byte loads: an
// expanded row need not be 4-byte aligned.
inline void LoadScales(const uint8_t* const scales[4], size_t b, float32x4_t sc[2]) {
  const float32x4_t a = vcombine_f32(vreinterpret_f32_u8(vld1_u8(scales[0] + 8 * b)),
                                     vreinterpret_f32_u8(vld1_u8(scales[1] + 8 * b)));
  const float32x4_t c = vcombine_f32(vreinterpret_f32_u8(vld1_u8(scales[2] + 8 * b)),
                                     vreinterpret_f32_u8(vld1_u8(scales[3] + 8 * b)));
#if defined(__aarch64__)
  sc[0] = vuzp1q_f32(a, c);
  sc[1] = vuzp2q_f32(a, c);
#else
  const float32x4x2_t u = vuzpq_f32(a, c);
  sc[0] = u.val[0];
  sc[1] = u.val[1];
#endif
}

// The float at byte `offset` of each row's region, row r in lane r (not necessarily aligned).
inline float32x4_t Gather4(const uint8_t* const p[4], size_t offset) {
  uint32_t m[4];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) std::memcpy(&m[r], p[r] + offset, 4);
  uint32x4_t v = vdupq_n_u32(m[0]);
  v = vsetq_lane_u32(m[1], v, 1);
  v = vsetq_lane_u32(m[2], v, 2);
  v = vsetq_lane_u32(m[3], v, 3);
  return vreinterpretq_f32_u32(v);
}

// The 32 products of a block (w0: values 0-15, w1: 16-31) in 4 int32 lanes: one scale a block (every
// type but q6_K). Without the dot product one int16 accumulator takes all four widening multiplies:
// |level| <= 31 there, so 4 * 31 * 127 < 32,768.
template <bool kDot>
inline int32x4_t Dot32(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1) {
  if constexpr (kDot) {
#if defined(__ARM_FEATURE_DOTPROD)
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, x0), w1, x1);
#else
    static_assert(!kDot, "the dot-product kernels need a file compiled with +dotprod");
#endif
  } else {
#if defined(__aarch64__)
    int16x8_t p = vmlal_high_s8(vmull_s8(vget_low_s8(w0), vget_low_s8(x0)), w0, x0);
    p = vmlal_high_s8(vmlal_s8(p, vget_low_s8(w1), vget_low_s8(x1)), w1, x1);
#else
    int16x8_t p = vmlal_s8(vmull_s8(vget_low_s8(w0), vget_low_s8(x0)), vget_high_s8(w0), vget_high_s8(x0));
    p = vmlal_s8(vmlal_s8(p, vget_low_s8(w1), vget_low_s8(x1)), vget_high_s8(w1), vget_high_s8(x1));
#endif
    return vpaddlq_s16(p);
  }
}

template <bool kDot>
inline int32x4_t RowDots32(const int8x16_t w0[4], const int8x16_t w1[4], int8x16_t x0, int8x16_t x1) {
  return PairSums(PairSums(Dot32<kDot>(w0[0], w1[0], x0, x1), Dot32<kDot>(w0[1], w1[1], x0, x1)),
                  PairSums(Dot32<kDot>(w0[2], w1[2], x0, x1), Dot32<kDot>(w0[3], w1[3], x0, x1)));
}

// The pointers of rows r0..r0 + 3 into the expanded rows (a partial last group repeats its last row;
// only the real rows are stored): levels, scales, minimums.
struct RowGroup {
  const int8_t* q[4];
  const uint8_t* scales[4];
  const uint8_t* mins[4];
};
inline RowGroup GroupAt(const ArmKQuantJob& job, size_t r0) {
  RowGroup g;
  for (size_t r = 0; r < 4; ++r) {
    const uint8_t* row = job.rows + (r0 + r < job.rows_count ? r0 + r : job.rows_count - 1) * job.row_bytes;
    g.q[r] = reinterpret_cast<const int8_t*>(row);
    g.scales[r] = row + job.cols;
    g.mins[r] = row + job.cols + job.cols / 4;
  }
  return g;
}

// 4 rows x kT tokens from token t0; out[t] lane r is row r's output. Every small loop is unrolled
// (GCC at -O2 otherwise keeps the weight vectors in a stack array, reloaded for every dot), and each
// row's pointers only move forward.
template <bool kDot, bool kMins, bool kSplit, size_t kT>
inline void KQuantTile(const ArmKQuantJob& job, RowGroup g, size_t t0, float32x4_t out[kT]) {
  const int8_t** q = g.q;
  const uint8_t* const* scales = g.scales;
  const uint8_t* const* mins = g.mins;
  const int8_t* xq[kT];
  const uint8_t* dx_at[kT];
  const float* tw[kT];
  float32x4_t acc[kT];
#pragma GCC unroll 4
  for (size_t t = 0; t < kT; ++t) {
    const uint8_t* rec = job.packed + (t0 + t) * job.packed_stride;
    xq[t] = reinterpret_cast<const int8_t*>(rec);
    dx_at[t] = rec + job.d8_offset;
    if constexpr (kMins) tw[t] = job.min_weights + (t0 + t) * job.blocks;
    acc[t] = vdupq_n_f32(0.0f);
  }
  for (size_t b = 0; b < job.blocks; ++b) {
    int8x16_t w0[4], w1[4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      w0[r] = vld1q_s8(q[r]);
      w1[r] = vld1q_s8(q[r] + 16);
      q[r] += 32;
    }
    float32x4_t sc[2];
    if constexpr (kSplit) {
      LoadScales(scales, b, sc);
    } else {
      sc[0] = Gather4(scales, 8 * b);
    }
    float32x4_t mn = vdupq_n_f32(0.0f);
    if constexpr (kMins) mn = Gather4(mins, 4 * b);
#pragma GCC unroll 4
    for (size_t t = 0; t < kT; ++t) {
      float dx;
      std::memcpy(&dx, dx_at[t], 4);
      dx_at[t] += 32;
      const int8x16_t x0 = vld1q_s8(xq[t]), x1 = vld1q_s8(xq[t] + 16);
      xq[t] += 32;
      if constexpr (kSplit) {
        acc[t] = vfmaq_f32(acc[t], vcvtq_f32_s32(RowDots<kDot>(w0, x0)), vmulq_n_f32(sc[0], dx));
        acc[t] = vfmaq_f32(acc[t], vcvtq_f32_s32(RowDots<kDot>(w1, x1)), vmulq_n_f32(sc[1], dx));
      } else {
        acc[t] = vfmaq_f32(acc[t], vcvtq_f32_s32(RowDots32<kDot>(w0, w1, x0, x1)), vmulq_n_f32(sc[0], dx));
      }
      if constexpr (kMins) acc[t] = vfmaq_f32(acc[t], mn, vdupq_n_f32(tw[t][b]));
    }
  }
#pragma GCC unroll 4
  for (size_t t = 0; t < kT; ++t) out[t] = acc[t];
}

template <bool kDot, bool kMins, bool kSplit, size_t kT>
inline void KQuantTileAndStore(const ArmKQuantJob& job, const RowGroup& g, size_t r0, size_t t0) {
  float32x4_t acc[kT];
  KQuantTile<kDot, kMins, kSplit, kT>(job, g, t0, acc);
  const size_t n = job.rows_count - r0 < 4 ? job.rows_count - r0 : 4;
  for (size_t t = 0; t < kT; ++t) {
    float* y = job.y + (t0 + t) * job.y_stride + r0;
    if (n == 4) {
      vst1q_f32(y, acc[t]);
    } else {
      float v[4];
      vst1q_f32(v, acc[t]);
      for (size_t r = 0; r < n; ++r) y[r] = v[r];
    }
  }
}

template <bool kDot, bool kMins, bool kSplit>
void KQuantRunRows(const ArmKQuantJob& job) {
  for (size_t r0 = 0; r0 < job.rows_count; r0 += 4) {
    const RowGroup g = GroupAt(job, r0);
    size_t t = 0;
    for (; t + kKQuantTokens <= job.tokens; t += kKQuantTokens) KQuantTileAndStore<kDot, kMins, kSplit, kKQuantTokens>(job, g, r0, t);
    for (; t < job.tokens; ++t) KQuantTileAndStore<kDot, kMins, kSplit, 1>(job, g, r0, t);
  }
}

template <bool kDot>
void KQuantRun(const ArmKQuantJob& job) {
  if (job.split_scales) {
    KQuantRunRows<kDot, false, true>(job);  // q6_K: no minimums
  } else if (job.min_weights != nullptr) {
    KQuantRunRows<kDot, true, false>(job);
  } else {
    KQuantRunRows<kDot, false, false>(job);
  }
}

}  // namespace
}  // namespace fgemma::kernels_internal
