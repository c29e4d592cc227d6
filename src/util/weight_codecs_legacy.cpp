// Row codecs of ggml's 32-value types beside Q4_0: Q4_1, Q5_0 and Q5_1 (layouts in
// util/weight_types.h). Encoders follow ggml's reference quantizers' definitions (round half up by
// adding 0.5 and truncating, every product rounded to float32 before the addition, as a build without
// FMA contraction computes them); decoders give each stored value as float32.
#include <cfloat>
#include <cmath>
#include <cstring>

#include "util/float_types.h"
#include "util/weight_types.h"

namespace fgemma {

namespace {

constexpr size_t kN = kQuantBlockValues, kHalf = kN / 2;


// trunc(fl(fl(v * id) + add)) clamped to [0, top]; the product stored through a volatile keeps the
// compiler from fusing it with the addition (see QuantizeRowQ4_0). NaN gives 0.
int RoundedLevel(float v, float id, float add, int top) {
  volatile float scaled = v * id;
  const float q = std::trunc(scaled + add);
  return q >= static_cast<float>(top) ? top : (q >= 0.0f ? static_cast<int>(q) : 0);
}

// Block minimum and maximum (ggml's "type-1" encoders).
void MinMax(const float* x, float* lo, float* hi) {
  *lo = FLT_MAX;
  *hi = -FLT_MAX;
  for (size_t j = 0; j < kN; ++j) {
    *lo = x[j] < *lo ? x[j] : *lo;
    *hi = x[j] > *hi ? x[j] : *hi;
  }
}

// A "type-1" block's d = (max - min) / levels and m = min, stored as f16 at offsets 0 and 2 (both
// BlockQ4_1 and BlockQ5_1); returns min and 1 / d (0 for a constant block) for the levels.
struct Type1Scale {
  float min, inverse;
};
Type1Scale EncodeType1Scale(const float* x, float levels, uint8_t* block) {
  float lo, hi;
  MinMax(x, &lo, &hi);
  const float d = (hi - lo) / levels;
  StoreF16(block, d);
  StoreF16(block + 2, lo);
  return {lo, d != 0.0f ? 1.0f / d : 0.0f};
}

// The 5-bit types' values: nibbles in q (elements j and j + 16 share byte j), fifth bits in qh.
void StoreFiveBit(const int* v, uint8_t* qh, uint8_t* q) {
  uint32_t high = 0;
  for (size_t j = 0; j < kHalf; ++j) {
    q[j] = static_cast<uint8_t>((v[j] & 15) | (v[j + kHalf] & 15) << 4);
    high |= static_cast<uint32_t>(v[j] >> 4 & 1) << j;
    high |= static_cast<uint32_t>(v[j + kHalf] >> 4 & 1) << (j + kHalf);
  }
  for (size_t i = 0; i < 4; ++i) qh[i] = static_cast<uint8_t>(high >> (8 * i));
}

}  // namespace

// ---------------------------------------------------------------- Q4_1
// d = (max - min) / 15, m = min, v = min(15, trunc((x - min) / d + 0.5)).

void QuantizeRowQ4_1(const float* x, size_t n, void* out) {
  auto* p = static_cast<uint8_t*>(out);
  for (size_t b = 0; b < n / kN; ++b, x += kN, p += sizeof(BlockQ4_1)) {
    const auto [lo, id] = EncodeType1Scale(x, 15.0f, p);
    for (size_t j = 0; j < kHalf; ++j) {
      const int v0 = RoundedLevel(x[j] - lo, id, 0.5f, 15), v1 = RoundedLevel(x[j + kHalf] - lo, id, 0.5f, 15);
      p[offsetof(BlockQ4_1, q) + j] = static_cast<uint8_t>(v0 | v1 << 4);
    }
  }
}

void DequantizeRowQ4_1(const void* in, size_t n, float* out) {
  const auto* p = static_cast<const uint8_t*>(in);
  for (size_t b = 0; b < n / kN; ++b, p += sizeof(BlockQ4_1), out += kN) {
    const float d = LoadF16(p + offsetof(BlockQ4_1, d)), m = LoadF16(p + offsetof(BlockQ4_1, m));
    for (size_t j = 0; j < kHalf; ++j) {
      const uint8_t byte = p[offsetof(BlockQ4_1, q) + j];
      out[j] = d * static_cast<float>(byte & 15) + m;
      out[j + kHalf] = d * static_cast<float>(byte >> 4) + m;
    }
  }
}

// ---------------------------------------------------------------- Q5_0
// As Q4_0 with 32 levels: d = (the element of largest magnitude, the first on ties) / -16,
// v = min(31, trunc(x / d + 16.5)).

void QuantizeRowQ5_0(const float* x, size_t n, void* out) {
  auto* p = static_cast<uint8_t*>(out);
  for (size_t b = 0; b < n / kN; ++b, x += kN, p += sizeof(BlockQ5_0)) {
    const float d = LargestMagnitude(x, kN) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    StoreF16(p + offsetof(BlockQ5_0, d), d);
    int v[kN];
    for (size_t j = 0; j < kN; ++j) v[j] = RoundedLevel(x[j], id, 16.5f, 31);
    StoreFiveBit(v, p + offsetof(BlockQ5_0, qh), p + offsetof(BlockQ5_0, q));
  }
}

void DequantizeRowQ5_0(const void* in, size_t n, float* out) {
  const auto* p = static_cast<const uint8_t*>(in);
  for (size_t b = 0; b < n / kN; ++b, p += sizeof(BlockQ5_0), out += kN) {
    const float d = LoadF16(p + offsetof(BlockQ5_0, d));
    for (size_t e = 0; e < kN; ++e)
      out[e] = d * static_cast<float>(Q5Value(p + offsetof(BlockQ5_0, qh), p + offsetof(BlockQ5_0, q), e) - 16);
  }
}

// ---------------------------------------------------------------- Q5_1
// As Q4_1 with 32 levels: d = (max - min) / 31, v = min(31, trunc((x - min) / d + 0.5)).

void QuantizeRowQ5_1(const float* x, size_t n, void* out) {
  auto* p = static_cast<uint8_t*>(out);
  for (size_t b = 0; b < n / kN; ++b, x += kN, p += sizeof(BlockQ5_1)) {
    const auto [lo, id] = EncodeType1Scale(x, 31.0f, p);
    int v[kN];
    for (size_t j = 0; j < kN; ++j) v[j] = RoundedLevel(x[j] - lo, id, 0.5f, 31);
    StoreFiveBit(v, p + offsetof(BlockQ5_1, qh), p + offsetof(BlockQ5_1, q));
  }
}

void DequantizeRowQ5_1(const void* in, size_t n, float* out) {
  const auto* p = static_cast<const uint8_t*>(in);
  for (size_t b = 0; b < n / kN; ++b, p += sizeof(BlockQ5_1), out += kN) {
    const float d = LoadF16(p + offsetof(BlockQ5_1, d)), m = LoadF16(p + offsetof(BlockQ5_1, m));
    for (size_t e = 0; e < kN; ++e)
      out[e] = d * static_cast<float>(Q5Value(p + offsetof(BlockQ5_1, qh), p + offsetof(BlockQ5_1, q), e)) + m;
  }
}

}  // namespace fgemma
