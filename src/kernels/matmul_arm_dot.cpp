// sdot / vsdot kernels over 4-row panels (layout in matmul_internal.h). Compiled with
// -march=armv8.2-a+dotprod (src/CMakeLists.txt), called only when the CPU has the dot product.
// Per row and token the order is that of MatMulInterleavedReference:
//   y = fold over blocks b: y = fma(float(int32 dot_b), float(dw_b * dx_b), y), from 0,
// the same instructions for every token whatever the batch (a batch equals one token at a time)
// and for every panel whatever the slice (a row slice equals the whole matrix).
#include "kernels/matmul_arm_dot.h"

#if defined(FGEMMA_ARM_DOT)
#include <arm_neon.h>

namespace fgemma::kernels_internal {
namespace {

#if defined(__aarch64__)
constexpr size_t kTokens = 4;  // 32 vector registers: 8 weight vectors + 4 tokens' sums
#else
constexpr size_t kTokens = 2;  // 16 on AArch32
#endif

// One block's dot of 4 rows with one token's 32 quantized activations: group g of the weights
// (rows 0-3 x elements 4g..4g+3) against the activations' group g broadcast (by-element sdot).
inline int32x4_t BlockDot(const int8x16_t w[8], const int8_t* xq) {
  const int8x16_t x0 = vld1q_s8(xq), x1 = vld1q_s8(xq + 16);
  int32x4_t d = vdupq_n_s32(0);
  d = vdotq_lane_s32(d, w[0], vget_low_s8(x0), 0);
  d = vdotq_lane_s32(d, w[1], vget_low_s8(x0), 1);
  d = vdotq_lane_s32(d, w[2], vget_high_s8(x0), 0);
  d = vdotq_lane_s32(d, w[3], vget_high_s8(x0), 1);
  d = vdotq_lane_s32(d, w[4], vget_low_s8(x1), 0);
  d = vdotq_lane_s32(d, w[5], vget_low_s8(x1), 1);
  d = vdotq_lane_s32(d, w[6], vget_high_s8(x1), 0);
  d = vdotq_lane_s32(d, w[7], vget_high_s8(x1), 1);
  return d;
}

template <bool kQ4, size_t kT>
void Panel(const ArmDotJob& job, const uint8_t* panel, const uint8_t* const* rec, float32x4_t* acc) {
  const float* scales = reinterpret_cast<const float*>(panel);
  const uint8_t* q = panel + job.scale_bytes;
  for (size_t t = 0; t < kT; ++t) acc[t] = vdupq_n_f32(0.0f);
  for (size_t b = 0; b < job.blocks; ++b) {
    int8x16_t w[8];
    if constexpr (kQ4) {
      // Nibbles stored as two's complement (w + 8) ^ 8: shifted to the high half they are 16 * w,
      // so the dot is 16x and an exact arithmetic shift takes it back.
      const uint8_t* p = q + b * 64;
      for (int j = 0; j < 4; ++j) {
        const uint8x16_t v = vld1q_u8(p + 16 * j);
        w[j] = vreinterpretq_s8_u8(vshlq_n_u8(v, 4));
        w[j + 4] = vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0xF0)));
      }
    } else {
      const int8_t* p = reinterpret_cast<const int8_t*>(q + b * 128);
      for (int g = 0; g < 8; ++g) w[g] = vld1q_s8(p + 16 * g);
    }
    const float32x4_t dw = vld1q_f32(scales + 4 * b);
    for (size_t t = 0; t < kT; ++t) {
      int32x4_t d = BlockDot(w, reinterpret_cast<const int8_t*>(rec[t]) + 32 * b);
      if constexpr (kQ4) d = vshrq_n_s32(d, 4);
      float dx;
      __builtin_memcpy(&dx, rec[t] + job.d8_offset + 32 * b, 4);
      const float32x4_t s = vmulq_n_f32(dw, dx);
      acc[t] = vfmaq_f32(acc[t], vcvtq_f32_s32(d), s);
    }
  }
}

template <bool kQ4>
void Run(const ArmDotJob& job) {
  const size_t panels = (job.rows + 3) / 4;
  for (size_t p = 0; p < panels; ++p) {
    const uint8_t* panel = job.panels + p * job.panel_bytes;
    const size_t r0 = 4 * p, n = job.rows - r0 < 4 ? job.rows - r0 : 4;
    for (size_t t0 = 0; t0 < job.tokens; t0 += kTokens) {
      const size_t nt = job.tokens - t0 < kTokens ? job.tokens - t0 : kTokens;
      const uint8_t* rec[kTokens];
      for (size_t t = 0; t < kTokens; ++t) rec[t] = job.packed + (t0 + (t < nt ? t : 0)) * job.packed_stride;
      float32x4_t acc[kTokens];
      if (nt == kTokens) {
        Panel<kQ4, kTokens>(job, panel, rec, acc);
      } else {
        for (size_t t = 0; t < nt; ++t) Panel<kQ4, 1>(job, panel, rec + t, acc + t);
      }
      for (size_t t = 0; t < nt; ++t) {
        float out[4];
        vst1q_f32(out, acc[t]);
        float* y = job.y + (t0 + t) * job.y_stride + r0;
        for (size_t r = 0; r < n; ++r) y[r] = out[r];
      }
    }
  }
}

}  // namespace

void ArmDotMatMul(const ArmDotJob& job) {
  if (job.q4) {
    Run<true>(job);
  } else {
    Run<false>(job);
  }
}

}  // namespace fgemma::kernels_internal
#endif  // FGEMMA_ARM_DOT
