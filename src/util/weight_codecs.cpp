// The row codecs of util/weight_types.h: each storage type's encoder beside its decoder.
#include <cmath>
#include <cstring>

#include "util/float_types.h"
#include "util/weight_types.h"

namespace fgemma {

namespace {


uint16_t LoadU16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

}  // namespace

// ---------------------------------------------------------------- float types

void CopyRowF32(const float* x, size_t n, void* out) {
  if (n > 0) std::memcpy(out, x, n * 4);
}

void DequantizeRowF32(const void* in, size_t n, float* out) {
  if (n > 0) std::memcpy(out, in, n * 4);
}

void ConvertRowF16(const float* x, size_t n, void* out) {
  auto* p = static_cast<uint8_t*>(out);
  for (size_t i = 0; i < n; ++i) StoreF16(p + 2 * i, x[i]);
}

void DequantizeRowF16(const void* in, size_t n, float* out) {
  const auto* p = static_cast<const uint8_t*>(in);
  for (size_t i = 0; i < n; ++i) out[i] = F16ToF32(LoadU16(p + 2 * i));
}

void ConvertRowBf16(const float* x, size_t n, void* out) {
  auto* p = static_cast<uint8_t*>(out);
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = F32ToBf16(x[i]);
    std::memcpy(p + 2 * i, &h, 2);
  }
}

void DequantizeRowBf16(const void* in, size_t n, float* out) {
  const auto* p = static_cast<const uint8_t*>(in);
  for (size_t i = 0; i < n; ++i) out[i] = Bf16ToF32(LoadU16(p + 2 * i));
}

// ---------------------------------------------------------------- Q8_0
// Blocks are read and written through byte pointers at the struct's offsets: rows in a mapped file
// need not be aligned for the struct.

void QuantizeRowQ8_0(const float* x, size_t n, void* out) {
  constexpr size_t kN = kQuantBlockValues;
  auto* p = static_cast<uint8_t*>(out);
  for (size_t b = 0; b < n / kN; ++b, x += kN, p += sizeof(BlockQ8_0)) {
    float amax = 0.0f;
    for (size_t j = 0; j < kN; ++j) {
      const float a = std::fabs(x[j]);
      amax = amax > a ? amax : a;  // ggml's MAX()
    }
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    StoreF16(p + offsetof(BlockQ8_0, d), d);
    for (size_t j = 0; j < kN; ++j) {
      const float scaled = x[j] * id;  // one float32 product, then round half away from zero
      const float r = std::round(scaled);
      // |r| <= 127 for finite input; non-finite input gives clamped bytes instead of UB.
      const int q = r >= 127.0f ? 127 : (r <= -127.0f ? -127 : (r == r ? static_cast<int>(r) : 0));
      p[offsetof(BlockQ8_0, q) + j] = static_cast<uint8_t>(static_cast<int8_t>(q));
    }
  }
}

void DequantizeRowQ8_0(const void* in, size_t n, float* out) {
  constexpr size_t kN = kQuantBlockValues;
  const auto* p = static_cast<const uint8_t*>(in);
  for (size_t b = 0; b < n / kN; ++b, p += sizeof(BlockQ8_0)) {
    const float d = F16ToF32(LoadU16(p + offsetof(BlockQ8_0, d)));
    for (size_t i = 0; i < kN; ++i)
      out[b * kN + i] = d * static_cast<float>(static_cast<int8_t>(p[offsetof(BlockQ8_0, q) + i]));
  }
}

// ---------------------------------------------------------------- Q4_0

void QuantizeRowQ4_0(const float* x, size_t n, void* out) {
  constexpr size_t kN = kQuantBlockValues, kHalf = kN / 2;
  auto* p = static_cast<uint8_t*>(out);
  for (size_t b = 0; b < n / kN; ++b, x += kN, p += sizeof(BlockQ4_0)) {
    const float d = LargestMagnitude(x, kN) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    StoreF16(p + offsetof(BlockQ4_0, d), d);
    auto nibble = [id](float v) -> uint8_t {
      // ggml's reference: x * id rounded to float32, then + 8.5f rounded to float32, truncated.
      // The two roundings matter (a fused multiply-add differs on ~0.06% of the fixtures' values),
      // and compilers contract a * b + c into an FMA where the target has one (GCC's default for
      // GNU dialects, -ffp-contract=fast), even across statements and casts. Storing the product
      // through a volatile forces its rounding to float32.
      volatile float scaled = v * id;
      const float t = scaled + 8.5f;
      const float q = std::trunc(t);
      // t >= 0.5 for finite input (|x * id| <= 8); NaN gives 0 instead of UB.
      return q >= 15.0f ? 15 : (q >= 0.0f ? static_cast<uint8_t>(q) : 0);
    };
    for (size_t j = 0; j < kHalf; ++j) {
      p[offsetof(BlockQ4_0, q) + j] = static_cast<uint8_t>(nibble(x[j]) | (nibble(x[j + kHalf]) << 4));
    }
  }
}

void DequantizeRowQ4_0(const void* in, size_t n, float* out) {
  constexpr size_t kN = kQuantBlockValues, kHalf = kN / 2;
  const auto* p = static_cast<const uint8_t*>(in);
  for (size_t b = 0; b < n / kN; ++b, p += sizeof(BlockQ4_0)) {
    const float d = F16ToF32(LoadU16(p + offsetof(BlockQ4_0, d)));
    for (size_t i = 0; i < kHalf; ++i) {
      const uint8_t byte = p[offsetof(BlockQ4_0, q) + i];
      out[b * kN + i] = d * static_cast<float>((byte & 0x0f) - 8);
      out[b * kN + i + kHalf] = d * static_cast<float>((byte >> 4) - 8);
    }
  }
}

}  // namespace fgemma
