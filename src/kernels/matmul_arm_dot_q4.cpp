// sdot kernels over aarch64's paired q4_0 panels (8 rows a panel, two rows' nibbles a byte; layout
// in matmul_internal.h), for the NEON_DOTPROD and NEON_I8MM targets (the latter's token pairs take
// smmla in matmul_arm_i8mm.cpp over the same panels). Compiled with -march=armv8.2-a+dotprod
// (src/CMakeLists.txt), called only when the CPU has the dot product. Per row and token the float
// steps are those of matmul_arm_dot.cpp (MatMulInterleavedReference's fold):
//   y = fold over blocks b: y = fma(float(int32 dot_b), float(dw_b * dx_b), y), from 0,
// so a batch equals one token at a time and a row slice (of whole panels) the whole matrix.
#include "kernels/arm_dot_common.h"
#include "kernels/matmul_arm_dot.h"

#if defined(FGEMMA_ARM_DOT) && defined(__aarch64__)
#include <arm_neon.h>

namespace fgemma::kernels_internal {
namespace {

// Paired q4_0 panels (8 rows; matmul_internal.h): byte i of group vector g, lane r, is the int8
// 16 * w_{r+4} + (w_r + 8) for element 4g + i. One sdot of the vector against the token's group g
// sums 16 * dot_{r+4} + dot_r + 8 * s (s: the sum of the token's block), and one of the vector
// shifted right 4 (arithmetic: w_{r+4} exactly) sums dot_{r+4}. So `lo` starts from -8 * s (the
// record's start), and lo - 16 * hi is dot_r: per 8 rows and block 8 shifts for 16 sdots where
// the 4-row panels took 16 masks and shifts.

// A paired block already in registers (v: the 8 group vectors, h: each shifted right 4) against
// one token, lo from the block's start. In one asm statement for GCC: from the intrinsics it reused
// the last token's weight registers as accumulators, a register copy per sdot.
inline void Q4PairTokenDot(const int8x16_t v[8], const int8x16_t h[8], int8x16_t x0, int8x16_t x1,
                           int32x4_t sixteen, int32x4_t& lo, int32x4_t& hi) {
#if defined(__clang__)
  hi = BlockDotFrom(vdupq_n_s32(0), h, x0, x1);
  lo = vmlsq_s32(BlockDotFrom(lo, v, x0, x1), hi, sixteen);
#else
  asm("movi %[hi].4s, #0\n\t"
      "sdot %[lo].4s, %[v0].16b, %[x0].4b[0]\n\t"
      "sdot %[hi].4s, %[h0].16b, %[x0].4b[0]\n\t"
      "sdot %[lo].4s, %[v1].16b, %[x0].4b[1]\n\t"
      "sdot %[hi].4s, %[h1].16b, %[x0].4b[1]\n\t"
      "sdot %[lo].4s, %[v2].16b, %[x0].4b[2]\n\t"
      "sdot %[hi].4s, %[h2].16b, %[x0].4b[2]\n\t"
      "sdot %[lo].4s, %[v3].16b, %[x0].4b[3]\n\t"
      "sdot %[hi].4s, %[h3].16b, %[x0].4b[3]\n\t"
      "sdot %[lo].4s, %[v4].16b, %[x1].4b[0]\n\t"
      "sdot %[hi].4s, %[h4].16b, %[x1].4b[0]\n\t"
      "sdot %[lo].4s, %[v5].16b, %[x1].4b[1]\n\t"
      "sdot %[hi].4s, %[h5].16b, %[x1].4b[1]\n\t"
      "sdot %[lo].4s, %[v6].16b, %[x1].4b[2]\n\t"
      "sdot %[hi].4s, %[h6].16b, %[x1].4b[2]\n\t"
      "sdot %[lo].4s, %[v7].16b, %[x1].4b[3]\n\t"
      "sdot %[hi].4s, %[h7].16b, %[x1].4b[3]\n\t"
      "mls %[lo].4s, %[hi].4s, %[k].4s"
      : [lo] "+w"(lo), [hi] "=&w"(hi)
      : [v0] "w"(v[0]), [v1] "w"(v[1]), [v2] "w"(v[2]), [v3] "w"(v[3]), [v4] "w"(v[4]), [v5] "w"(v[5]),
        [v6] "w"(v[6]), [v7] "w"(v[7]), [h0] "w"(h[0]), [h1] "w"(h[1]), [h2] "w"(h[2]), [h3] "w"(h[3]),
        [h4] "w"(h[4]), [h5] "w"(h[5]), [h6] "w"(h[6]), [h7] "w"(h[7]), [x0] "w"(x0), [x1] "w"(x1),
        [k] "w"(sixteen));
#endif
}

// One block loaded (moving `q` past its 128 bytes) and shifted, against one token. Written out for
// GCC, which from the intrinsics unpacks whole blocks ahead (spilling) or adds register copies.
#if defined(__clang__)
inline void Q4PairBlockDot(const uint8_t*& q, int8x16_t x0, int8x16_t x1, int32x4_t start, int32x4_t sixteen,
                           int32x4_t& lo, int32x4_t& hi) {
  const int8x16x4_t a = Load64(q), b = Load64(q);
  const int8x16_t v[8] = {a.val[0], a.val[1], a.val[2], a.val[3], b.val[0], b.val[1], b.val[2], b.val[3]};
  int8x16_t h[8];
  for (int g = 0; g < 8; ++g) h[g] = vshrq_n_s8(v[g], 4);
  lo = start;
  Q4PairTokenDot(v, h, x0, x1, sixteen, lo, hi);
}
#else
inline void Q4PairBlockDot(const uint8_t*& q, int8x16_t x0, int8x16_t x1, int32x4_t start, int32x4_t sixteen,
                           int32x4_t& lo, int32x4_t& hi) {
  int8x16x4_t a, b;
  int8x16_t t0, t1;
  asm volatile(
      "ld1 {%S[a].16b - %V[a].16b}, [%[q]], #64\n\t"
      "ld1 {%S[b].16b - %V[b].16b}, [%[q]], #64\n\t"
      "mov %[lo].16b, %[s].16b\n\t"
      "movi %[hi].4s, #0\n\t"
      "sshr %[t0].16b, %S[a].16b, #4\n\t"
      "sdot %[lo].4s, %S[a].16b, %[x0].4b[0]\n\t"
      "sshr %[t1].16b, %T[a].16b, #4\n\t"
      "sdot %[hi].4s, %[t0].16b, %[x0].4b[0]\n\t"
      "sdot %[lo].4s, %T[a].16b, %[x0].4b[1]\n\t"
      "sshr %[t0].16b, %U[a].16b, #4\n\t"
      "sdot %[hi].4s, %[t1].16b, %[x0].4b[1]\n\t"
      "sdot %[lo].4s, %U[a].16b, %[x0].4b[2]\n\t"
      "sshr %[t1].16b, %V[a].16b, #4\n\t"
      "sdot %[hi].4s, %[t0].16b, %[x0].4b[2]\n\t"
      "sdot %[lo].4s, %V[a].16b, %[x0].4b[3]\n\t"
      "sshr %[t0].16b, %S[b].16b, #4\n\t"
      "sdot %[hi].4s, %[t1].16b, %[x0].4b[3]\n\t"
      "sdot %[lo].4s, %S[b].16b, %[x1].4b[0]\n\t"
      "sshr %[t1].16b, %T[b].16b, #4\n\t"
      "sdot %[hi].4s, %[t0].16b, %[x1].4b[0]\n\t"
      "sdot %[lo].4s, %T[b].16b, %[x1].4b[1]\n\t"
      "sshr %[t0].16b, %U[b].16b, #4\n\t"
      "sdot %[hi].4s, %[t1].16b, %[x1].4b[1]\n\t"
      "sdot %[lo].4s, %U[b].16b, %[x1].4b[2]\n\t"
      "sshr %[t1].16b, %V[b].16b, #4\n\t"
      "sdot %[hi].4s, %[t0].16b, %[x1].4b[2]\n\t"
      "sdot %[lo].4s, %V[b].16b, %[x1].4b[3]\n\t"
      "sdot %[hi].4s, %[t1].16b, %[x1].4b[3]\n\t"
      "mls %[lo].4s, %[hi].4s, %[k].4s"
      : [lo] "=&w"(lo), [hi] "=&w"(hi), [a] "=&w"(a), [b] "=&w"(b), [t0] "=&w"(t0), [t1] "=&w"(t1), [q] "+r"(q)
      : [x0] "w"(x0), [x1] "w"(x1), [s] "w"(start), [k] "w"(sixteen),
        "m"(*reinterpret_cast<const uint8_t(*)[128]>(q)));
}
#endif

// One token x kP paired panels (8 kP rows): out[2p] rows 0-3 of panel p, out[2p + 1] rows 4-7.
// The float steps per row and block are those of OneToken.
template <size_t kP>
void OneTokenPaired(const ArmDotJob& job, const uint8_t* panel, const uint8_t* rec, float32x4_t* out) {
  const uint8_t* q[kP];
  const uint8_t* dw[kP];  // 8 f32 scales a block
  float32x4_t acc[2 * kP];
  for (size_t p = 0; p < kP; ++p) {
    q[p] = panel + p * job.panel_bytes + job.scale_bytes;
    dw[p] = panel + p * job.panel_bytes;
    acc[2 * p] = acc[2 * p + 1] = vdupq_n_f32(0.0f);
  }
  const uint8_t* xq = rec;
  const uint8_t* dx_at = rec + job.d8_offset;
  const uint8_t* start_at = rec + job.bsum_offset + 4;  // -8 * s_b
  const int32x4_t sixteen = vdupq_n_s32(16);
  for (size_t b = job.blocks; b != 0; --b) {
    const int8x16x2_t x = Load32(xq);
    const float dx = LoadActScale(dx_at);
    const int32x4_t start = LoadQ4Start(start_at);
#pragma GCC unroll 4
    for (size_t p = 0; p < kP; ++p) {
      int32x4_t lo, hi;
      Q4PairBlockDot(q[p], x.val[0], x.val[1], start, sixteen, lo, hi);
      const float32x4x2_t d = LoadF32x2(dw[p]);
      acc[2 * p] = vfmaq_f32(acc[2 * p], vcvtq_f32_s32(lo), vmulq_n_f32(d.val[0], dx));
      acc[2 * p + 1] = vfmaq_f32(acc[2 * p + 1], vcvtq_f32_s32(hi), vmulq_n_f32(d.val[1], dx));
    }
  }
  for (size_t p = 0; p < 2 * kP; ++p) out[p] = acc[p];
}

// One paired panel x kT tokens (NEON_DOTPROD's multi-token products): the block's 8 vectors and
// their shifts stay in registers for the kT tokens. The same steps per row, token and block as
// OneTokenPaired (a batch equals one token at a time).
template <size_t kT>
void TokensPaired(const ArmDotJob& job, const uint8_t* panel, const uint8_t* const* rec, float32x4_t (*out)[kT]) {
  float32x4_t acc[2][kT];
  for (size_t t = 0; t < kT; ++t) acc[0][t] = acc[1][t] = vdupq_n_f32(0.0f);
  const uint8_t* q = panel + job.scale_bytes;
  const uint8_t* dw = panel;
  const uint8_t* xq[kT];
  const uint8_t* dx_at[kT];
  const uint8_t* start_at[kT];
  for (size_t t = 0; t < kT; ++t) {
    xq[t] = rec[t];
    dx_at[t] = rec[t] + job.d8_offset;
    start_at[t] = rec[t] + job.bsum_offset + 4;
  }
  const int32x4_t sixteen = vdupq_n_s32(16);
  for (size_t b = job.blocks; b != 0; --b) {
    const int8x16x4_t a = Load64(q), c = Load64(q);
    const int8x16_t v[8] = {a.val[0], a.val[1], a.val[2], a.val[3], c.val[0], c.val[1], c.val[2], c.val[3]};
    int8x16_t h[8];
    for (int g = 0; g < 8; ++g) h[g] = vshrq_n_s8(v[g], 4);
    const float32x4x2_t d = LoadF32x2(dw);
#pragma GCC unroll 4
    for (size_t t = 0; t < kT; ++t) {
      const int8x16x2_t x = Load32(xq[t]);
      const float dx = LoadActScale(dx_at[t]);
      int32x4_t lo = LoadQ4Start(start_at[t]), hi;
      Q4PairTokenDot(v, h, x.val[0], x.val[1], sixteen, lo, hi);
      acc[0][t] = vfmaq_f32(acc[0][t], vcvtq_f32_s32(lo), vmulq_n_f32(d.val[0], dx));
      acc[1][t] = vfmaq_f32(acc[1][t], vcvtq_f32_s32(hi), vmulq_n_f32(d.val[1], dx));
    }
  }
  for (size_t t = 0; t < kT; ++t) {
    out[0][t] = acc[0][t];
    out[1][t] = acc[1][t];
  }
}

// Rows [r0, r0 + 8) of token t from acc[0] (rows 0-3) and acc[1] (rows 4-7), clipped to job.rows.
inline void StorePaired(const ArmDotJob& job, size_t r0, size_t t, float32x4_t lo, float32x4_t hi) {
  float* y = job.y + t * job.y_stride + r0;
  if (job.rows - r0 >= 8) {
    vst1q_f32(y, lo);
    vst1q_f32(y + 4, hi);
    return;
  }
  float out[8];
  vst1q_f32(out, lo);
  vst1q_f32(out + 4, hi);
  for (size_t r = 0; r < job.rows - r0; ++r) y[r] = out[r];
}

template <size_t kP>
void OneTokenPairedAndStore(const ArmDotJob& job, size_t p0, size_t t) {
  float32x4_t acc[2 * kP];
  OneTokenPaired<kP>(job, job.panels + p0 * job.panel_bytes, job.packed + t * job.packed_stride, acc);
  for (size_t p = 0; p < kP; ++p) StorePaired(job, 8 * (p0 + p), t, acc[2 * p], acc[2 * p + 1]);
}

constexpr size_t kPairedTokens = 4;  // 16 weight vectors (values and shifts) + 4 tokens' sums and one token's operands

void RunPaired(const ArmDotJob& job) {
  const size_t panels = (job.rows + 7) / 8;
  const size_t full = job.tokens / kPairedTokens * kPairedTokens;
  for (size_t p = 0; p < panels; ++p) {
    for (size_t t0 = 0; t0 < full; t0 += kPairedTokens) {
      const uint8_t* rec[kPairedTokens];
      for (size_t t = 0; t < kPairedTokens; ++t) rec[t] = job.packed + (t0 + t) * job.packed_stride;
      float32x4_t acc[2][kPairedTokens];
      TokensPaired<kPairedTokens>(job, job.panels + p * job.panel_bytes, rec, acc);
      for (size_t t = 0; t < kPairedTokens; ++t) StorePaired(job, 8 * p, t0 + t, acc[0][t], acc[1][t]);
    }
  }
  // The token tail (decode: all of it): 4 paired panels (32 rows) at a time, then 2, then 1.
  for (size_t t = full; t < job.tokens; ++t) {
    size_t p = 0;
    for (; p + 4 <= panels; p += 4) OneTokenPairedAndStore<4>(job, p, t);
    if (p + 2 <= panels) {
      OneTokenPairedAndStore<2>(job, p, t);
      p += 2;
    }
    for (; p < panels; ++p) OneTokenPairedAndStore<1>(job, p, t);
  }
}

}  // namespace

void ArmDotPairedQ4MatMul(const ArmDotJob& job) { RunPaired(job); }

}  // namespace fgemma::kernels_internal
#endif  // FGEMMA_ARM_DOT && __aarch64__
