// The expanded-row kernels with smmla (aarch64 i8mm) for multi-token products: compiled for
// ARMv8.2-A + dotprod + i8mm (src/CMakeLists.txt), called only on the NEON_I8MM target.
//
// smmla multiplies a 2x8 int8 matrix by the transpose of another into 2x2 int32: with two rows'
// 8 values side by side (vzip of their 64-bit halves) and two tokens' the same way, 4 smmla give a
// block's exact int32 dots for 2 rows x 2 tokens, lanes {r0 t0, r0 t1, r1 t0, r1 t1}. The float
// steps are those of kernels/arm_kquant-inl.h lane by lane (scale_r * dx_t is one multiply of the
// same two floats, each fma one rounding), so every (row, token) gets the bits of
// MatMulKQuantArmReference, as with sdot; a single token left over takes the sdot tile.
#include "kernels/matmul_arm_dot.h"

#if defined(FGEMMA_ARM_I8MM) && defined(__aarch64__)
#include "kernels/arm_kquant-inl.h"

namespace fgemma::kernels_internal {
namespace {

// Two rows' (or tokens') 16 values as smmla operands: lo = both first 8, hi = both second 8.
inline void Zip(int8x16_t a, int8x16_t b, int8x16_t* lo, int8x16_t* hi) {
  *lo = vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
  *hi = vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}

// The 16 products of half h for a row pair x token pair (w: the pair's zipped values, x: the tokens').
inline int32x4_t Mmla16(int32x4_t acc, const int8x16_t w[2], const int8x16_t x[2]) {
  return vmmlaq_s32(vmmlaq_s32(acc, w[0], x[0]), w[1], x[1]);
}

// 4 rows x 2 kPairs tokens from t0.
template <bool kMins, bool kSplit, size_t kPairs>
void MmlaTile(const ArmKQuantJob& job, RowGroup g, size_t r0, size_t t0) {
  const int8_t** q = g.q;
  const uint8_t* const* scales = g.scales;
  const uint8_t* const* mins = g.mins;
  constexpr size_t kT = 2 * kPairs;
  const int8_t* xq[kT];
  const uint8_t* dx_at[kT];
#pragma GCC unroll 4
  for (size_t t = 0; t < kT; ++t) {
    const uint8_t* rec = job.packed + (t0 + t) * job.packed_stride;
    xq[t] = reinterpret_cast<const int8_t*>(rec);
    dx_at[t] = rec + job.d8_offset;
  }
  float32x4_t acc[2][kPairs];  // [row pair][token pair]
#pragma GCC unroll 4
  for (size_t i = 0; i < 2 * kPairs; ++i) acc[i / kPairs][i % kPairs] = vdupq_n_f32(0.0f);
  for (size_t b = 0; b < job.blocks; ++b) {
    int8x16_t w[2][2][2];  // [row pair][half][zip part]
#pragma GCC unroll 2
    for (int p = 0; p < 2; ++p) {
      const int8x16_t a0 = vld1q_s8(q[2 * p]), a1 = vld1q_s8(q[2 * p] + 16);
      const int8x16_t b0 = vld1q_s8(q[2 * p + 1]), b1 = vld1q_s8(q[2 * p + 1] + 16);
      q[2 * p] += 32;
      q[2 * p + 1] += 32;
      Zip(a0, b0, &w[p][0][0], &w[p][0][1]);
      Zip(a1, b1, &w[p][1][0], &w[p][1][1]);
    }
    // Lanes {r0, r0, r1, r1} of each row pair: scale_h (h = 0, 1) and min.
    float32x4_t sc[2][2], mn[2];
    {
      const float32x4_t s0 = Gather4(scales, 8 * b);
      sc[0][0] = vzip1q_f32(s0, s0);
      sc[1][0] = vzip2q_f32(s0, s0);
      if constexpr (kSplit) {
        const float32x4_t s1 = Gather4(scales, 8 * b + 4);
        sc[0][1] = vzip1q_f32(s1, s1);
        sc[1][1] = vzip2q_f32(s1, s1);
      }
      if constexpr (kMins) {
        const float32x4_t m = Gather4(mins, 4 * b);
        mn[0] = vzip1q_f32(m, m);
        mn[1] = vzip2q_f32(m, m);
      }
    }
#pragma GCC unroll 2
    for (size_t k = 0; k < kPairs; ++k) {
      int8x16_t x[2][2];  // [half][zip part]
      Zip(vld1q_s8(xq[2 * k]), vld1q_s8(xq[2 * k + 1]), &x[0][0], &x[0][1]);
      Zip(vld1q_s8(xq[2 * k] + 16), vld1q_s8(xq[2 * k + 1] + 16), &x[1][0], &x[1][1]);
      xq[2 * k] += 32;
      xq[2 * k + 1] += 32;
      float d0, d1;
      std::memcpy(&d0, dx_at[2 * k], 4);
      std::memcpy(&d1, dx_at[2 * k + 1], 4);
      dx_at[2 * k] += 32;
      dx_at[2 * k + 1] += 32;
      const float32x4_t dx = vcombine_f32(vset_lane_f32(d1, vdup_n_f32(d0), 1), vset_lane_f32(d1, vdup_n_f32(d0), 1));
      float32x4_t tw = vdupq_n_f32(0.0f);
      if constexpr (kMins) {
        const float* t_at = job.min_weights + (t0 + 2 * k) * job.blocks + b;
        const float32x2_t pair = vset_lane_f32(t_at[job.blocks], vdup_n_f32(t_at[0]), 1);
        tw = vcombine_f32(pair, pair);
      }
#pragma GCC unroll 2
      for (int p = 0; p < 2; ++p) {
        if constexpr (kSplit) {
          const int32x4_t h0 = Mmla16(vdupq_n_s32(0), w[p][0], x[0]);
          const int32x4_t h1 = Mmla16(vdupq_n_s32(0), w[p][1], x[1]);
          acc[p][k] = vfmaq_f32(acc[p][k], vcvtq_f32_s32(h0), vmulq_f32(sc[p][0], dx));
          acc[p][k] = vfmaq_f32(acc[p][k], vcvtq_f32_s32(h1), vmulq_f32(sc[p][1], dx));
        } else {
          const int32x4_t d = Mmla16(Mmla16(vdupq_n_s32(0), w[p][0], x[0]), w[p][1], x[1]);
          acc[p][k] = vfmaq_f32(acc[p][k], vcvtq_f32_s32(d), vmulq_f32(sc[p][0], dx));
        }
        if constexpr (kMins) acc[p][k] = vfmaq_f32(acc[p][k], mn[p], tw);
      }
    }
  }
  // Lanes {r0 t0, r0 t1, r1 t0, r1 t1} of row pair p, token pair k.
  for (size_t p = 0; p < 2; ++p) {
    for (size_t k = 0; k < kPairs; ++k) {
      float v[4];
      vst1q_f32(v, acc[p][k]);
      for (size_t i = 0; i < 4; ++i) {
        const size_t r = r0 + 2 * p + i / 2, t = t0 + 2 * k + i % 2;
        if (r < job.rows_count) job.y[t * job.y_stride + r] = v[i];
      }
    }
  }
}

template <bool kMins, bool kSplit>
void MmlaRows(const ArmKQuantJob& job) {
  for (size_t r0 = 0; r0 < job.rows_count; r0 += 4) {
    const RowGroup g = GroupAt(job, r0);
    size_t t = 0;
    for (; t + 4 <= job.tokens; t += 4) MmlaTile<kMins, kSplit, 2>(job, g, r0, t);
    for (; t + 2 <= job.tokens; t += 2) MmlaTile<kMins, kSplit, 1>(job, g, r0, t);
    for (; t < job.tokens; ++t) KQuantTileAndStore<true, kMins, kSplit, 1>(job, g, r0, t);
  }
}

}  // namespace

void ArmKQuantI8mmMatMul(const ArmKQuantJob& job) {
  if (job.split_scales) {
    MmlaRows<false, true>(job);
  } else if (job.min_weights != nullptr) {
    MmlaRows<true, false>(job);
  } else {
    MmlaRows<false, false>(job);
  }
}

}  // namespace fgemma::kernels_internal
#endif  // FGEMMA_ARM_I8MM && __aarch64__
