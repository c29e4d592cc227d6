// sdot / vsdot kernels over 4-row panels (layout in matmul_internal.h; aarch64's q4_0 panels are
// paired, in matmul_arm_dot_q4.cpp). Compiled with
// -march=armv8.2-a+dotprod (src/CMakeLists.txt), called only when the CPU has the dot product.
// Per row and token the order is that of MatMulInterleavedReference:
//   y = fold over blocks b: y = fma(float(int32 dot_b), float(dw_b * dx_b), y), from 0,
// the same instructions for every token whatever the batch (a batch equals one token at a time)
// and for every panel whatever the slice (a row slice equals the whole matrix).
#include "kernels/arm_dot_common.h"
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
inline int32x4_t BlockDot(const int8x16_t w[8], const int8x16_t x0, const int8x16_t x1) {
#if defined(__aarch64__)
  // The by-element form indexes all four 32-bit lanes of a 128-bit register: no half extraction.
  return BlockDotFrom(vdupq_n_s32(0), w, x0, x1);
#else
  // AArch32: the halves of a q register are d registers already.
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
#endif
}


#if !defined(__aarch64__)
// AArch32: vld1 takes no immediate offset, so from the intrinsics GCC computes the address of each
// 16-byte load of a block in a register of its own (an add per load) and, short of registers,
// spills and reloads the pointers: the 2-token q8_0 loop was 81 instructions for 16 vsdots. Each
// load below is one post-indexed vld1 of up to four d registers (32 bytes, a q register pair
// listed by %h) that also moves its pointer; the "m" operand tells GCC which bytes are read.
inline int8x16x2_t Load32(const uint8_t*& p) {
  int8x16x2_t v;
  asm("vld1.8 %h0, [%1]!" : "=w"(v), "+r"(p) : "m"(*reinterpret_cast<const uint8_t(*)[32]>(p)));
  return v;
}
inline int8x16_t Load16(const uint8_t*& p) {
  int8x16_t v;
  asm("vld1.8 {%e0-%f0}, [%1]!" : "=w"(v), "+r"(p) : "m"(*reinterpret_cast<const uint8_t(*)[16]>(p)));
  return v;
}
inline float32x4_t LoadScales(const float*& p) {
  float32x4_t v;
  asm("vld1.32 {%e0-%f0}, [%1]!" : "=w"(v), "+r"(p) : "m"(*reinterpret_cast<const float(*)[4]>(p)));
  return v;
}
// The scale of an activation block in both lanes of a d register (vmulq_lane_f32 multiplies by it
// as vmulq_n_f32 does: the same VMUL by scalar), moving `p` to the next block's (32 bytes on).
inline float32x2_t LoadActScale(const uint8_t*& p, uint32_t step) {
  float32x2_t v;
  asm("vld1.32 {%P0[]}, [%1], %2" : "=w"(v), "+r"(p) : "r"(step), "m"(*reinterpret_cast<const float*>(p)));
  return v;
}
#endif

#if !defined(__aarch64__)
// AArch32: the next block's group vectors of a panel, moving `q` past them (q8_0: as stored; q4_0:
// nibbles shifted to 16 * w).
template <bool kQ4>
inline void LoadNext(const uint8_t*& q, int8x16_t w[8]) {
  if constexpr (kQ4) {
    const int8x16x2_t lo = Load32(q), hi = Load32(q);
    const uint8x16_t part[4] = {vreinterpretq_u8_s8(lo.val[0]), vreinterpretq_u8_s8(lo.val[1]),
                                vreinterpretq_u8_s8(hi.val[0]), vreinterpretq_u8_s8(hi.val[1])};
    for (int j = 0; j < 4; ++j) {
      w[j] = vreinterpretq_s8_u8(vshlq_n_u8(part[j], 4));
      w[j + 4] = vreinterpretq_s8_u8(vandq_u8(part[j], vdupq_n_u8(0xF0)));
    }
  } else {
    // 16 bytes per load: GCC moves the registers of 32-byte pairs into others before the vsdots.
    for (int g = 0; g < 8; ++g) w[g] = Load16(q);
  }
}
#endif

// kP panels (4 kP rows) x kT tokens: each activation block is loaded once for the kP panels and
// each weight block once for the kT tokens. Every (row, token) output goes through the same
// instructions whatever kP and kT are.
template <bool kQ4, size_t kP, size_t kT>
void Panels(const ArmDotJob& job, const uint8_t* panel, const uint8_t* const* rec, float32x4_t (*out)[kT]) {
  float32x4_t acc[kP][kT];  // local: through `out` the compiler would store them every block
  for (size_t p = 0; p < kP; ++p)
    for (size_t t = 0; t < kT; ++t) acc[p][t] = vdupq_n_f32(0.0f);
#if defined(__aarch64__)
  // Every pointer moves forward through post-indexed loads (see Load64).
  const uint8_t* q[kP];
  const float* scales[kP];
  for (size_t p = 0; p < kP; ++p) {
    q[p] = panel + p * job.panel_bytes + job.scale_bytes;
    scales[p] = reinterpret_cast<const float*>(panel + p * job.panel_bytes);
  }
  static_assert(!kQ4, "aarch64 q4_0 panels are paired (matmul_arm_dot_q4.cpp)");
  const uint8_t* xq[kT];
  const uint8_t* dx_at[kT];
#pragma GCC unroll 4
  for (size_t t = 0; t < kT; ++t) {
    xq[t] = rec[t];
    dx_at[t] = rec[t] + job.d8_offset;
  }
  for (size_t b = job.blocks; b != 0; --b) {
    int8x16_t w[kP][8];
    float32x4_t dw[kP];
    for (size_t p = 0; p < kP; ++p) {
      const int8x16x4_t lo = Load64(q[p]), hi = Load64(q[p]);
      for (int g = 0; g < 4; ++g) {
        w[p][g] = lo.val[g];
        w[p][g + 4] = hi.val[g];
      }
      dw[p] = LoadScales(scales[p]);
    }
#pragma GCC unroll 4
    for (size_t t = 0; t < kT; ++t) {
      const int8x16x2_t x = Load32(xq[t]);
      const float dx = LoadActScale(dx_at[t]);
      for (size_t p = 0; p < kP; ++p) {
        const int32x4_t d = BlockDot(w[p], x.val[0], x.val[1]);
        const float32x4_t s = vmulq_n_f32(dw[p], dx);
        acc[p][t] = vfmaq_f32(acc[p][t], vcvtq_f32_s32(d), s);
      }
    }
  }
#else
  // AArch32: one panel x two tokens (16 q registers), every pointer a scalar of its own moving
  // forward through post-indexed loads (see Load32); in arrays GCC kept them on the stack.
  static_assert(kP == 1 && kT == 2, "the AArch32 tile is one panel by two tokens");
  const uint8_t* q = panel + job.scale_bytes;
  const float* scales = reinterpret_cast<const float*>(panel);
  const uint8_t *x0 = rec[0], *x1 = rec[1];
  const uint8_t *dx0 = rec[0] + job.d8_offset, *dx1 = rec[1] + job.d8_offset;
  for (size_t b = job.blocks; b != 0; --b) {
    int8x16_t w[8];
    LoadNext<kQ4>(q, w);
    const float32x4_t dw = LoadScales(scales);
    const int8x16x2_t xa = Load32(x0);
    const float32x2_t da = LoadActScale(dx0, 32);
    int32x4_t d = BlockDot(w, xa.val[0], xa.val[1]);
    if constexpr (kQ4) d = vshrq_n_s32(d, 4);
    acc[0][0] = vfmaq_f32(acc[0][0], vcvtq_f32_s32(d), vmulq_lane_f32(dw, da, 0));
    const int8x16x2_t xb = Load32(x1);
    const float32x2_t db = LoadActScale(dx1, 32);
    d = BlockDot(w, xb.val[0], xb.val[1]);
    if constexpr (kQ4) d = vshrq_n_s32(d, 4);
    acc[0][1] = vfmaq_f32(acc[0][1], vcvtq_f32_s32(d), vmulq_lane_f32(dw, db, 0));
  }
#endif
  for (size_t p = 0; p < kP; ++p)
    for (size_t t = 0; t < kT; ++t) out[p][t] = acc[p][t];
}

template <bool kQ4, size_t kP, size_t kT>
void Store(const ArmDotJob& job, size_t r0, size_t t0, size_t nt, float32x4_t (*acc)[kT]) {
  for (size_t p = 0; p < kP; ++p) {
    const size_t rp = r0 + 4 * p;
    if (rp >= job.rows) break;
    const size_t n = job.rows - rp < 4 ? job.rows - rp : 4;
    for (size_t t = 0; t < nt; ++t) {
      float out[4];
      vst1q_f32(out, acc[p][t]);
      float* y = job.y + (t0 + t) * job.y_stride + rp;
      for (size_t r = 0; r < n; ++r) y[r] = out[r];
    }
  }
}


// One token x kP panels (4 kP rows): the decode step's products (the tied head most of all). Each
// panel's weights and scales are read through a pointer of its own that only moves forward, the
// token's block is loaded once for the kP panels, and the float steps per row and block are those
// of Panels (one scale multiply per panel and block). On aarch64 a block of 4 panels is 64
// instructions for 32 sdots (q8_0): 8 weight loads, 4 scale loads, the token's 2 loads, 4 x (zero,
// convert, scale multiply, fused add) and the loop's 2.
template <bool kQ4, size_t kP>
void OneToken(const ArmDotJob& job, const uint8_t* panel, const uint8_t* rec, float32x4_t* out) {
  const uint8_t* q[kP];
  const float* dw[kP];
  float32x4_t acc[kP];
  for (size_t p = 0; p < kP; ++p) {
    q[p] = panel + p * job.panel_bytes + job.scale_bytes;
    dw[p] = reinterpret_cast<const float*>(panel + p * job.panel_bytes);
    acc[p] = vdupq_n_f32(0.0f);
  }
#if defined(__aarch64__)
  static_assert(!kQ4, "aarch64 q4_0 panels are paired (matmul_arm_dot_q4.cpp)");
  const uint8_t* xq = rec;
  const uint8_t* dx_at = rec + job.d8_offset;
  for (size_t b = job.blocks; b != 0; --b) {
    const int8x16x2_t x = Load32(xq);
    const float dx = LoadActScale(dx_at);
#pragma GCC unroll 8
    for (size_t p = 0; p < kP; ++p) {
      int8x16_t w[8];
      const int8x16x4_t lo = Load64(q[p]), hi = Load64(q[p]);
      for (int g = 0; g < 4; ++g) {
        w[g] = lo.val[g];
        w[g + 4] = hi.val[g];
      }
      const int32x4_t d = BlockDot(w, x.val[0], x.val[1]);
      const float32x4_t s = vmulq_n_f32(LoadScales(dw[p]), dx);
      acc[p] = vfmaq_f32(acc[p], vcvtq_f32_s32(d), s);
    }
  }
#else
  // AArch32: post-indexed loads throughout (see Load32).
  const uint8_t* xq = rec;
  const uint8_t* dx_at = rec + job.d8_offset;
  for (size_t b = job.blocks; b != 0; --b) {
    const int8x16x2_t x = Load32(xq);
    const float32x2_t dx = LoadActScale(dx_at, 32);
    for (size_t p = 0; p < kP; ++p) {
      int8x16_t w[8];
      LoadNext<kQ4>(q[p], w);
      int32x4_t d = BlockDot(w, x.val[0], x.val[1]);
      if constexpr (kQ4) d = vshrq_n_s32(d, 4);
      const float32x4_t s = vmulq_lane_f32(LoadScales(dw[p]), dx, 0);
      acc[p] = vfmaq_f32(acc[p], vcvtq_f32_s32(d), s);
    }
  }
#endif
  for (size_t p = 0; p < kP; ++p) out[p] = acc[p];
}

template <bool kQ4, size_t kP>
void OneTokenAndStore(const ArmDotJob& job, size_t p0, size_t t) {
  float32x4_t acc[kP];
  OneToken<kQ4, kP>(job, job.panels + p0 * job.panel_bytes, job.packed + t * job.packed_stride, acc);
  for (size_t p = 0; p < kP; ++p) {
    const size_t rp = 4 * (p0 + p);
    float* y = job.y + t * job.y_stride + rp;
    if (job.rows - rp >= 4) {
      vst1q_f32(y, acc[p]);
    } else {
      float out[4];
      vst1q_f32(out, acc[p]);
      for (size_t r = 0; r < job.rows - rp; ++r) y[r] = out[r];
    }
  }
}

#if defined(__aarch64__)
constexpr size_t kDecodePanels = 8;  // 32 rows per pass: the token's block is loaded once for them
#else
constexpr size_t kDecodePanels = 2;  // 16 q registers on AArch32
#endif

template <bool kQ4>
void Run(const ArmDotJob& job) {
  const size_t panels = (job.rows + 3) / 4;
  const size_t full = job.tokens / kTokens * kTokens;  // tokens in whole tiles
  size_t p = 0;
#if defined(__aarch64__)
  // 2 panels x 4 tokens: each token's block loaded once for 8 rows (16 weight vectors in registers).
  for (; p + 2 <= panels; p += 2) {
    for (size_t t0 = 0; t0 < full; t0 += kTokens) {
      const uint8_t* rec[kTokens];
      for (size_t t = 0; t < kTokens; ++t) rec[t] = job.packed + (t0 + t) * job.packed_stride;
      float32x4_t acc[2][kTokens];
      Panels<kQ4, 2, kTokens>(job, job.panels + p * job.panel_bytes, rec, acc);
      Store<kQ4, 2, kTokens>(job, 4 * p, t0, kTokens, acc);
    }
  }
#endif
  for (; p < panels; ++p) {
    for (size_t t0 = 0; t0 < full; t0 += kTokens) {
      const uint8_t* rec[kTokens];
      for (size_t t = 0; t < kTokens; ++t) rec[t] = job.packed + (t0 + t) * job.packed_stride;
      float32x4_t acc[1][kTokens];
      Panels<kQ4, 1, kTokens>(job, job.panels + p * job.panel_bytes, rec, acc);
      Store<kQ4, 1, kTokens>(job, 4 * p, t0, kTokens, acc);
    }
  }
  // The token tail (decode: all of it), kDecodePanels panels at a time, then 2 (aarch64: 4), then 1.
  constexpr size_t kHalf = kDecodePanels / 2;
  for (size_t t = full; t < job.tokens; ++t) {
    size_t p = 0;
    for (; p + kDecodePanels <= panels; p += kDecodePanels) OneTokenAndStore<kQ4, kDecodePanels>(job, p, t);
    if (p + kHalf <= panels) {
      OneTokenAndStore<kQ4, kHalf>(job, p, t);
      p += kHalf;
    }
    for (; p < panels; ++p) OneTokenAndStore<kQ4, 1>(job, p, t);
  }
}

}  // namespace

void ArmDotMatMul(const ArmDotJob& job) {
#if defined(__aarch64__)
  if (job.q4) {  // paired panels on aarch64
    ArmDotPairedQ4MatMul(job);
    return;
  }
  Run<false>(job);
#else
  if (job.q4) {
    Run<true>(job);
  } else {
    Run<false>(job);
  }
#endif
}

}  // namespace fgemma::kernels_internal
#endif  // FGEMMA_ARM_DOT
