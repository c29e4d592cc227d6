// sdot / vsdot kernels over 4-row panels (layout in matmul_internal.h). Compiled with
// -march=armv8.2-a+dotprod (src/CMakeLists.txt), called only when the CPU has the dot product.
// Per row and token the order is that of MatMulInterleavedReference:
//   y = fold over blocks b: y = fma(float(int32 dot_b), float(dw_b * dx_b), y), from 0,
// the same instructions for every token whatever the batch (a batch equals one token at a time)
// and for every panel whatever the slice (a row slice equals the whole matrix).
#include "kernels/arm_post_index_loads.h"
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
  int32x4_t d = vdupq_n_s32(0);
#if defined(__aarch64__)
  // The by-element form indexes all four 32-bit lanes of a 128-bit register: no half extraction.
  d = vdotq_laneq_s32(d, w[0], x0, 0);
  d = vdotq_laneq_s32(d, w[1], x0, 1);
  d = vdotq_laneq_s32(d, w[2], x0, 2);
  d = vdotq_laneq_s32(d, w[3], x0, 3);
  d = vdotq_laneq_s32(d, w[4], x1, 0);
  d = vdotq_laneq_s32(d, w[5], x1, 1);
  d = vdotq_laneq_s32(d, w[6], x1, 2);
  d = vdotq_laneq_s32(d, w[7], x1, 3);
#else
  // AArch32: the halves of a q register are d registers already.
  d = vdotq_lane_s32(d, w[0], vget_low_s8(x0), 0);
  d = vdotq_lane_s32(d, w[1], vget_low_s8(x0), 1);
  d = vdotq_lane_s32(d, w[2], vget_high_s8(x0), 0);
  d = vdotq_lane_s32(d, w[3], vget_high_s8(x0), 1);
  d = vdotq_lane_s32(d, w[4], vget_low_s8(x1), 0);
  d = vdotq_lane_s32(d, w[5], vget_low_s8(x1), 1);
  d = vdotq_lane_s32(d, w[6], vget_high_s8(x1), 0);
  d = vdotq_lane_s32(d, w[7], vget_high_s8(x1), 1);
#endif
  return d;
}
inline int32x4_t BlockDot(const int8x16_t w[8], const int8_t* xq) {
  return BlockDot(w, vld1q_s8(xq), vld1q_s8(xq + 16));
}

#if defined(__aarch64__)
// A q4_0 block of a panel (4 rows) against the token's block x0, x1, moving `q` past it, from
// `start` (the block's -8 * sum of x): each 16 bytes masked and shifted to w + 8 in [0, 15]
// (groups j and j + 4) just before their two sdots, so the sum is the block's dot itself. Written
// out because from intrinsics GCC unpacks whole blocks ahead (spilling) or adds register copies.
#if defined(__clang__)
inline int32x4_t Q4BlockDot(const uint8_t*& q, int8x16_t x0, int8x16_t x1, uint8x16_t low_mask, int32x4_t start) {
  const int8x16x4_t v = Load64(q);
  int32x4_t d = start;
  const uint8x16_t p0 = vreinterpretq_u8_s8(v.val[0]), p1 = vreinterpretq_u8_s8(v.val[1]);
  const uint8x16_t p2 = vreinterpretq_u8_s8(v.val[2]), p3 = vreinterpretq_u8_s8(v.val[3]);
  d = vdotq_laneq_s32(d, vreinterpretq_s8_u8(vandq_u8(p0, low_mask)), x0, 0);
  d = vdotq_laneq_s32(d, vreinterpretq_s8_u8(vshrq_n_u8(p0, 4)), x1, 0);
  d = vdotq_laneq_s32(d, vreinterpretq_s8_u8(vandq_u8(p1, low_mask)), x0, 1);
  d = vdotq_laneq_s32(d, vreinterpretq_s8_u8(vshrq_n_u8(p1, 4)), x1, 1);
  d = vdotq_laneq_s32(d, vreinterpretq_s8_u8(vandq_u8(p2, low_mask)), x0, 2);
  d = vdotq_laneq_s32(d, vreinterpretq_s8_u8(vshrq_n_u8(p2, 4)), x1, 2);
  d = vdotq_laneq_s32(d, vreinterpretq_s8_u8(vandq_u8(p3, low_mask)), x0, 3);
  return vdotq_laneq_s32(d, vreinterpretq_s8_u8(vshrq_n_u8(p3, 4)), x1, 3);
}
inline int32x4_t LoadQ4Start(const uint8_t*& p) {
  const int32x4_t v = vld1q_dup_s32(reinterpret_cast<const int32_t*>(p));
  p += 8;
  return v;
}
#else
inline int32x4_t Q4BlockDot(const uint8_t*& q, int8x16_t x0, int8x16_t x1, uint8x16_t low_mask, int32x4_t start) {
  int32x4_t d;
  int8x16x4_t v;
  int8x16_t t0, t1, t2, t3;
  asm volatile(
      "ld1 {%S[v].16b - %V[v].16b}, [%[q]], #64\n\t"
      "mov %[d].16b, %[s].16b\n\t"
      "and %[t0].16b, %S[v].16b, %[m].16b\n\t"
      "ushr %[t1].16b, %S[v].16b, #4\n\t"
      "and %[t2].16b, %T[v].16b, %[m].16b\n\t"
      "ushr %[t3].16b, %T[v].16b, #4\n\t"
      "sdot %[d].4s, %[t0].16b, %[x0].4b[0]\n\t"
      "sdot %[d].4s, %[t1].16b, %[x1].4b[0]\n\t"
      "and %[t0].16b, %U[v].16b, %[m].16b\n\t"
      "ushr %[t1].16b, %U[v].16b, #4\n\t"
      "sdot %[d].4s, %[t2].16b, %[x0].4b[1]\n\t"
      "sdot %[d].4s, %[t3].16b, %[x1].4b[1]\n\t"
      "and %[t2].16b, %V[v].16b, %[m].16b\n\t"
      "ushr %[t3].16b, %V[v].16b, #4\n\t"
      "sdot %[d].4s, %[t0].16b, %[x0].4b[2]\n\t"
      "sdot %[d].4s, %[t1].16b, %[x1].4b[2]\n\t"
      "sdot %[d].4s, %[t2].16b, %[x0].4b[3]\n\t"
      "sdot %[d].4s, %[t3].16b, %[x1].4b[3]"
      : [d] "=&w"(d), [v] "=&w"(v), [t0] "=&w"(t0), [t1] "=&w"(t1), [t2] "=&w"(t2), [t3] "=&w"(t3), [q] "+r"(q)
      : [x0] "w"(x0), [x1] "w"(x1), [m] "w"(low_mask), [s] "w"(start),
        "m"(*reinterpret_cast<const uint8_t(*)[64]>(q)));
  return d;
}

// The q4_0 start of an activation block, -8 * (the sum of its 32 values), in every lane, moving `p`
// to the next block's.
inline int32x4_t LoadQ4Start(const uint8_t*& p) {
  int32x4_t v;
  asm volatile("ld1r {%0.4s}, [%1], %2" : "=w"(v), "+r"(p) : "r"(size_t{8}), "m"(*reinterpret_cast<const uint8_t(*)[4]>(p)));
  return v;
}
#endif

// BlockDot from `d` instead of 0 (aarch64 q4_0: from the block's start).
inline int32x4_t BlockDotFrom(int32x4_t d, const int8x16_t w[8], const int8x16_t x0, const int8x16_t x1) {
  d = vdotq_laneq_s32(d, w[0], x0, 0);
  d = vdotq_laneq_s32(d, w[1], x0, 1);
  d = vdotq_laneq_s32(d, w[2], x0, 2);
  d = vdotq_laneq_s32(d, w[3], x0, 3);
  d = vdotq_laneq_s32(d, w[4], x1, 0);
  d = vdotq_laneq_s32(d, w[5], x1, 1);
  d = vdotq_laneq_s32(d, w[6], x1, 2);
  return vdotq_laneq_s32(d, w[7], x1, 3);
}
#endif

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

// The 8 group vectors of block b of a panel (q8_0: as stored; q4_0: nibbles shifted to 16 * w).
template <bool kQ4>
inline void LoadBlock(const uint8_t* q, size_t b, int8x16_t w[8]) {
  if constexpr (kQ4) {
    // Nibbles stored as two's complement (w + 8) ^ 8: shifted to the high half they are 16 * w,
    // so the dot is 16x and an exact arithmetic shift takes it back.
#if defined(__aarch64__)
    const uint8x16x4_t v = vld1q_u8_x4(q + b * 64);  // one 64-byte load feeds 8 sdots
    const uint8x16_t part[4] = {v.val[0], v.val[1], v.val[2], v.val[3]};
#else
    const uint8x16_t part[4] = {vld1q_u8(q + b * 64), vld1q_u8(q + b * 64 + 16), vld1q_u8(q + b * 64 + 32),
                                vld1q_u8(q + b * 64 + 48)};
#endif
    for (int j = 0; j < 4; ++j) {
      w[j] = vreinterpretq_s8_u8(vshlq_n_u8(part[j], 4));
      w[j + 4] = vreinterpretq_s8_u8(vandq_u8(part[j], vdupq_n_u8(0xF0)));
    }
  } else {
    const int8_t* p = reinterpret_cast<const int8_t*>(q + b * 128);
#if defined(__aarch64__)
    const int8x16x4_t lo = vld1q_s8_x4(p), hi = vld1q_s8_x4(p + 64);
    for (int g = 0; g < 4; ++g) {
      w[g] = lo.val[g];
      w[g + 4] = hi.val[g];
    }
#else
    for (int g = 0; g < 8; ++g) w[g] = vld1q_s8(p + 16 * g);
#endif
  }
}

// The next block's group vectors of a panel, moving `q` past them (each 64-byte load then
// post-increments the pointer: no address arithmetic per panel and block).
template <bool kQ4>
inline void LoadNext(const uint8_t*& q, int8x16_t w[8]) {
#if defined(__aarch64__)
  if constexpr (kQ4) {
    const uint8x16x4_t v = vld1q_u8_x4(q);
    q += 64;
    for (int j = 0; j < 4; ++j) {
      w[j] = vreinterpretq_s8_u8(vshlq_n_u8(v.val[j], 4));
      w[j + 4] = vreinterpretq_s8_u8(vandq_u8(v.val[j], vdupq_n_u8(0xF0)));
    }
  } else {
    const int8x16x4_t lo = vld1q_s8_x4(reinterpret_cast<const int8_t*>(q));
    q += 64;
    const int8x16x4_t hi = vld1q_s8_x4(reinterpret_cast<const int8_t*>(q));
    q += 64;
    for (int g = 0; g < 4; ++g) {
      w[g] = lo.val[g];
      w[g + 4] = hi.val[g];
    }
  }
#else
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
#endif
}

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
  const uint8_t* xq[kT];
  const uint8_t* dx_at[kT];
  const uint8_t* start_at[kT];  // q4_0: -8 * s_b
#pragma GCC unroll 4
  for (size_t t = 0; t < kT; ++t) {
    xq[t] = rec[t];
    dx_at[t] = rec[t] + job.d8_offset;
    start_at[t] = rec[t] + job.bsum_offset + 4;
  }
  for (size_t b = job.blocks; b != 0; --b) {
    int8x16_t w[kP][8];
    float32x4_t dw[kP];
    for (size_t p = 0; p < kP; ++p) {
      if constexpr (kQ4) {  // w + 8 in [0, 15] (the start corrects the sum)
        const int8x16x4_t v = Load64(q[p]);
        for (int j = 0; j < 4; ++j) {
          const uint8x16_t part = vreinterpretq_u8_s8(v.val[j]);
          w[p][j] = vreinterpretq_s8_u8(vandq_u8(part, vdupq_n_u8(0x0F)));
          w[p][j + 4] = vreinterpretq_s8_u8(vshrq_n_u8(part, 4));
        }
      } else {
        const int8x16x4_t lo = Load64(q[p]), hi = Load64(q[p]);
        for (int g = 0; g < 4; ++g) {
          w[p][g] = lo.val[g];
          w[p][g + 4] = hi.val[g];
        }
      }
      dw[p] = LoadScales(scales[p]);
    }
#pragma GCC unroll 4
    for (size_t t = 0; t < kT; ++t) {
      const int8x16x2_t x = Load32(xq[t]);
      const float dx = LoadActScale(dx_at[t]);
      const int32x4_t start = kQ4 ? LoadQ4Start(start_at[t]) : vdupq_n_s32(0);
      for (size_t p = 0; p < kP; ++p) {
        const int32x4_t d = BlockDotFrom(start, w[p], x.val[0], x.val[1]);
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
  const uint8_t* xq = rec;
  const uint8_t* dx_at = rec + job.d8_offset;
  const uint8_t* start_at = rec + job.bsum_offset + 4;  // q4_0: -8 * s_b
  const uint8x16_t low_mask = vdupq_n_u8(0x0F);
  for (size_t b = job.blocks; b != 0; --b) {
    const int8x16x2_t x = Load32(xq);
    const float dx = LoadActScale(dx_at);
    int32x4_t start;
    if constexpr (kQ4) start = LoadQ4Start(start_at);
#pragma GCC unroll 8
    for (size_t p = 0; p < kP; ++p) {
      int32x4_t d;
      if constexpr (kQ4) {
        d = Q4BlockDot(q[p], x.val[0], x.val[1], low_mask, start);
      } else {
        int8x16_t w[8];
        const int8x16x4_t lo = Load64(q[p]), hi = Load64(q[p]);
        for (int g = 0; g < 4; ++g) {
          w[g] = lo.val[g];
          w[g + 4] = hi.val[g];
        }
        d = BlockDot(w, x.val[0], x.val[1]);
      }
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
  if (job.q4) {
    Run<true>(job);
  } else {
    Run<false>(job);
  }
}

}  // namespace fgemma::kernels_internal
#endif  // FGEMMA_ARM_DOT
