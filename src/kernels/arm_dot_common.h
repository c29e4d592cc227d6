// What the aarch64 dot-product and i8mm kernel files share (matmul_arm_dot.cpp,
// matmul_arm_dot_q4.cpp, matmul_arm_i8mm.cpp, each compiled with the dot product): the by-element
// sdot of a block, and post-indexed loads, each one instruction that also moves its pointer. From the intrinsics GCC
// keeps a copy or an add per pointer and block in the inner loops (about 0.4 instructions per
// sdot); the "m" operand tells it which bytes are read. Volatile keeps the loads in program order:
// GCC otherwise gathers a block's loads early and spills what they feed. Clang has no
// register-list operands in inline asm (%S..%V of a vector tuple); it forms post-indexed loads
// from the intrinsics itself. Internal linkage: each kernel file is compiled for its own -march.
#pragma once

#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

namespace fgemma::kernels_internal {
namespace {

#if defined(__clang__)
inline int8x16x4_t Load64(const uint8_t*& p) {
  const int8x16x4_t v = vld1q_s8_x4(reinterpret_cast<const int8_t*>(p));
  p += 64;
  return v;
}
inline int8x16x2_t Load32(const uint8_t*& p) {
  const int8x16x2_t v = vld1q_s8_x2(reinterpret_cast<const int8_t*>(p));
  p += 32;
  return v;
}
inline float32x4_t LoadScales(const float*& p) {
  const float32x4_t v = vld1q_f32(p);
  p += 4;
  return v;
}
inline float LoadActScale(const uint8_t*& p) {
  float v;
  __builtin_memcpy(&v, p, 4);
  p += 32;
  return v;
}
inline float32x4_t LoadF32(const uint8_t*& p) {
  const float32x4_t v = vld1q_f32(reinterpret_cast<const float*>(p));
  p += 16;
  return v;
}
inline float32x4x2_t LoadF32x2(const uint8_t*& p) {
  const float32x4x2_t v = vld1q_f32_x2(reinterpret_cast<const float*>(p));
  p += 32;
  return v;
}
inline float32x4x4_t LoadF32x4(const uint8_t*& p) {
  const float32x4x4_t v = vld1q_f32_x4(reinterpret_cast<const float*>(p));
  p += 64;
  return v;
}
// The -8 * (sum of a token's block) of its record in every lane (kernels/matmul_quant.h's bsum:
// the q4_0 kernels start their sums there), moving `p` to the next block's (8 bytes on).
inline int32x4_t LoadQ4Start(const uint8_t*& p) {
  const int32x4_t v = vld1q_dup_s32(reinterpret_cast<const int32_t*>(p));
  p += 8;
  return v;
}
#else
inline int8x16x4_t Load64(const uint8_t*& p) {
  int8x16x4_t v;
  asm volatile("ld1 {%S0.16b - %V0.16b}, [%1], #64" : "=w"(v), "+r"(p) : "m"(*reinterpret_cast<const uint8_t(*)[64]>(p)));
  return v;
}
inline int8x16x2_t Load32(const uint8_t*& p) {
  int8x16x2_t v;
  asm volatile("ld1 {%S0.16b - %T0.16b}, [%1], #32" : "=w"(v), "+r"(p) : "m"(*reinterpret_cast<const uint8_t(*)[32]>(p)));
  return v;
}
inline float32x4_t LoadScales(const float*& p) {
  float32x4_t v;
  asm volatile("ldr %q0, [%1], #16" : "=w"(v), "+r"(p) : "m"(*reinterpret_cast<const uint8_t(*)[16]>(p)));
  return v;
}
// The scale of an activation block (the first of its 8 copies), moving `p` to the next block's.
inline float LoadActScale(const uint8_t*& p) {
  float v;
  asm volatile("ldr %s0, [%1], #32" : "=w"(v), "+r"(p) : "m"(*reinterpret_cast<const uint8_t(*)[4]>(p)));
  return v;
}
inline float32x4_t LoadF32(const uint8_t*& p) {
  float32x4_t v;
  asm volatile("ldr %q0, [%1], #16" : "=w"(v), "+r"(p) : "m"(*reinterpret_cast<const uint8_t(*)[16]>(p)));
  return v;
}
inline float32x4x2_t LoadF32x2(const uint8_t*& p) {
  float32x4x2_t v;
  asm volatile("ld1 {%S0.4s - %T0.4s}, [%1], #32" : "=w"(v), "+r"(p) : "m"(*reinterpret_cast<const uint8_t(*)[32]>(p)));
  return v;
}
inline float32x4x4_t LoadF32x4(const uint8_t*& p) {
  float32x4x4_t v;
  asm volatile("ld1 {%S0.4s - %V0.4s}, [%1], #64" : "=w"(v), "+r"(p) : "m"(*reinterpret_cast<const uint8_t(*)[64]>(p)));
  return v;
}
inline int32x4_t LoadQ4Start(const uint8_t*& p) {
  int32x4_t v;
  asm volatile("ld1r {%0.4s}, [%1], %2" : "=w"(v), "+r"(p) : "r"(size_t{8}), "m"(*reinterpret_cast<const uint8_t(*)[4]>(p)));
  return v;
}
#endif

// One block's 8 by-element sdots for the 4 rows of w's lanes, from d: group g of the weights
// (elements 4g..4g+3) against the token's group g broadcast.
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

}  // namespace
}  // namespace fgemma::kernels_internal

#endif  // __aarch64__
