#include "util/float_types.h"

namespace fgemma {

float F16ToF32Portable(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalize
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t F32ToF16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;           // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;          // rounds to >= 65520: inf
  if (abs < 0x38800000u) {                                // subnormal half or zero
    if (abs < 0x33000000u) return sign;                   // < 2^-25 rounds to 0
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;                       // 14 - (e - 127) + 13 - 1 + ...
    uint32_t half_m = m >> (shift);
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_m & 1u))) ++half_m;
    return sign | static_cast<uint16_t>(half_m);
  }
  uint32_t r = abs + 0xfffu + ((abs >> 13) & 1u);         // round mantissa to 10 bits, ties even
  r -= (127 - 15) << 23;
  return sign | static_cast<uint16_t>(r >> 13);
}

}  // namespace fgemma
