// bfloat16 and IEEE half conversions (scalar). SIMD kernels have their own vector versions and are
// tested against these.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace fgemma {

// A float's bits and back (the bf16 dot product's reference works on them).
inline uint32_t FloatBits(float f) { return std::bit_cast<uint32_t>(f); }
inline float FloatFromBits(uint32_t u) { return std::bit_cast<float>(u); }

inline float Bf16ToF32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest, ties to even (NaN stays NaN), as PyTorch and SYNTH.md do.
inline uint16_t F32ToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

// Exact. The portable definition (bit operations) is the reference; where the CPU converts halves
// itself (aarch64; AArch32 with the VFP half-precision extension, __ARM_FP bit 1) its one
// instruction replaces a dozen (the block formats' scales are converted millions of times at load)
// and gives the same float for every half but signalling NaNs (quieted).
float F16ToF32Portable(uint16_t h);
#if defined(__aarch64__) || (defined(__ARM_FP16_FORMAT_IEEE) && defined(__ARM_FP) && (__ARM_FP & 2))
inline float F16ToF32(uint16_t h) {
  __fp16 x;
  std::memcpy(&x, &h, 2);
  return static_cast<float>(x);
}
#else
inline float F16ToF32(uint16_t h) { return F16ToF32Portable(h); }
#endif
uint16_t F32ToF16(float f);  // round to nearest even, overflow to inf

// An f16 at a byte address (any alignment; the block formats' scales), read or written.
inline float LoadF16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return F16ToF32(h);
}
inline void StoreF16(uint8_t* p, float v) {
  const uint16_t h = F32ToF16(v);
  std::memcpy(p, &h, 2);
}

}  // namespace fgemma
