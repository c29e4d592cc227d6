// Row codecs of ggml's K-quants Q4_K, Q5_K and Q6_K (super-blocks of 256 values; layouts in
// util/weight_types.h).
//
// Encoders round to nearest at each level of the format's definition:
//   Q4_K / Q5_K: per sub-block of 32, min_j = min(0, min x), scale_j = (max x - min_j) / L (L = 15 or
//     31); per super-block d = max_j scale_j / 63, dmin = max_j (-min_j) / 63 (f16), the 6-bit codes
//     sc_j = round(scale_j * 63 / max scale), m_j = round(-min_j * 63 / max min); then each value
//     v = clamp(round((x + dmin * m_j) / (d * sc_j)), 0, L) against the stored codes.
//   Q6_K: per sub-block of 16, scale_j = (the element of largest magnitude) / -32; per super-block
//     d = -(the scale of largest magnitude) / 128 (f16), sc_j = min(127, round(scale_j / d)), then
//     v = clamp(round(x / (d * sc_j)), -32, 31) + 32.
// llama.cpp's reference quantizers add a search over each sub-block's scale (and min) that lowers
// the weighted squared error, so their bytes differ from these; both decode by the same definition
// (every file either writes is read by the other).
// Decoders give each value as float32: d * sc_j (exact: an f16 times a 6- or 8-bit integer) times v,
// minus dmin * m_j.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "util/float_types.h"
#include "util/weight_types.h"

namespace fgemma {

namespace {

constexpr size_t kQK = kSuperBlockValues;

// Round half away from zero, clamped (NaN gives lo).
int RoundClamped(float v, int lo, int hi) {
  const float r = std::round(v);
  return r >= static_cast<float>(hi) ? hi : (r >= static_cast<float>(lo) ? static_cast<int>(r) : lo);
}

// Packs 8 six-bit scales and mins into scales[12] (the inverse of KQuantScaleMin).
void PackScaleMins(const int* sc, const int* mn, uint8_t* scales) {
  for (size_t j = 0; j < 4; ++j) {
    scales[j] = static_cast<uint8_t>(sc[j] | (sc[j + 4] >> 4) << 6);
    scales[j + 4] = static_cast<uint8_t>(mn[j] | (mn[j + 4] >> 4) << 6);
    scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | (mn[j + 4] & 15) << 4);
  }
}

// Q4_K / Q5_K: the codes of one super-block into `block` (d, dmin and scales, at the same offsets in
// both); v[256] the values in element order (0..levels).
void QuantizeSuperBlockKMin(const float* x, int levels, uint8_t* block, int* v) {
  float scale[8], minus_min[8];
  float max_scale = 0.0f, max_min = 0.0f;
  for (size_t j = 0; j < 8; ++j) {
    const float* s = x + 32 * j;
    float lo = 0.0f, hi = s[0];
    for (size_t i = 0; i < 32; ++i) {
      lo = std::min(lo, s[i]);
      hi = std::max(hi, s[i]);
    }
    scale[j] = hi > lo ? (hi - lo) / static_cast<float>(levels) : 0.0f;
    minus_min[j] = -lo;
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, minus_min[j]);
  }
  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  int sc[8], mn[8];
  for (size_t j = 0; j < 8; ++j) {
    sc[j] = RoundClamped(inv_scale * scale[j], 0, 63);
    mn[j] = RoundClamped(inv_min * minus_min[j], 0, 63);
  }
  const uint16_t dh = F32ToF16(max_scale / 63.0f), dminh = F32ToF16(max_min / 63.0f);
  std::memcpy(block + offsetof(BlockQ4_K, d), &dh, 2);
  std::memcpy(block + offsetof(BlockQ4_K, dmin), &dminh, 2);
  PackScaleMins(sc, mn, block + offsetof(BlockQ4_K, scales));
  static_assert(offsetof(BlockQ4_K, scales) == offsetof(BlockQ5_K, scales));
  const float d = F16ToF32(dh), dmin = F16ToF32(dminh);
  for (size_t j = 0; j < 8; ++j) {
    const float dl = d * static_cast<float>(sc[j]), ml = dmin * static_cast<float>(mn[j]);
    for (size_t i = 0; i < 32; ++i) v[32 * j + i] = dl != 0.0f ? RoundClamped((x[32 * j + i] + ml) / dl, 0, levels) : 0;
  }
}

// d * sc_j * v - dmin * m_j for each sub-block j of Q4_K (kFive false) or Q5_K rows.
template <bool kFive>
void DequantizeRowQK(const void* in, size_t n, float* out) {
  constexpr size_t kBytes = kFive ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  static_assert(offsetof(BlockQ4_K, dmin) == offsetof(BlockQ5_K, dmin));
  const auto* p = static_cast<const uint8_t*>(in);
  for (size_t b = 0; b < n / kQK; ++b, p += kBytes, out += kQK) {
    const float d = LoadF16(p + offsetof(BlockQ4_K, d)), dmin = LoadF16(p + offsetof(BlockQ4_K, dmin));
    for (size_t j = 0; j < 8; ++j) {
      const ScaleMin sm = KQuantScaleMin(p + offsetof(BlockQ4_K, scales), j);
      const float dl = d * sm.scale, ml = dmin * sm.min;
      for (size_t e = 32 * j; e < 32 * j + 32; ++e) {
        const int v = kFive ? Q5KValue(p, e) : KQuantNibble(p + offsetof(BlockQ4_K, q), e);
        out[e] = dl * static_cast<float>(v) - ml;
      }
    }
  }
}

}  // namespace

// ---------------------------------------------------------------- Q4_K

void QuantizeRowQ4_K(const float* x, size_t n, void* out) {
  auto* p = static_cast<uint8_t*>(out);
  for (size_t b = 0; b < n / kQK; ++b, x += kQK, p += sizeof(BlockQ4_K)) {
    int v[kQK];
    QuantizeSuperBlockKMin(x, 15, p, v);
    uint8_t* q = p + offsetof(BlockQ4_K, q);
    for (size_t c = 0; c < 4; ++c) {
      for (size_t l = 0; l < 32; ++l) q[32 * c + l] = static_cast<uint8_t>(v[64 * c + l] | v[64 * c + 32 + l] << 4);
    }
  }
}

void DequantizeRowQ4_K(const void* in, size_t n, float* out) { DequantizeRowQK<false>(in, n, out); }

// ---------------------------------------------------------------- Q5_K

void QuantizeRowQ5_K(const float* x, size_t n, void* out) {
  auto* p = static_cast<uint8_t*>(out);
  for (size_t b = 0; b < n / kQK; ++b, x += kQK, p += sizeof(BlockQ5_K)) {
    int v[kQK];
    QuantizeSuperBlockKMin(x, 31, p, v);
    uint8_t* q = p + offsetof(BlockQ5_K, q);
    uint8_t* qh = p + offsetof(BlockQ5_K, qh);
    std::memset(qh, 0, kQK / 8);
    for (size_t c = 0; c < 4; ++c) {
      for (size_t l = 0; l < 32; ++l) {
        const int lo = v[64 * c + l], hi = v[64 * c + 32 + l];
        q[32 * c + l] = static_cast<uint8_t>((lo & 15) | (hi & 15) << 4);
        qh[l] = static_cast<uint8_t>(qh[l] | (lo >> 4) << (2 * c) | (hi >> 4) << (2 * c + 1));
      }
    }
  }
}

void DequantizeRowQ5_K(const void* in, size_t n, float* out) { DequantizeRowQK<true>(in, n, out); }

// ---------------------------------------------------------------- Q6_K

void QuantizeRowQ6_K(const float* x, size_t n, void* out) {
  auto* p = static_cast<uint8_t*>(out);
  for (size_t b = 0; b < n / kQK; ++b, x += kQK, p += sizeof(BlockQ6_K)) {
    float scale[16];
    float max_scale = 0.0f, max_abs_scale = 0.0f;
    for (size_t j = 0; j < 16; ++j) {
      scale[j] = LargestMagnitude(x + 16 * j, 16) / -32.0f;
      if (std::fabs(scale[j]) > max_abs_scale) {
        max_abs_scale = std::fabs(scale[j]);
        max_scale = scale[j];
      }
    }
    const float inv = max_abs_scale > 0.0f ? -128.0f / max_scale : 0.0f;
    const uint16_t dh = F32ToF16(inv != 0.0f ? 1.0f / inv : 0.0f);
    std::memcpy(p + offsetof(BlockQ6_K, d), &dh, 2);
    const float d = F16ToF32(dh);
    auto* sc = reinterpret_cast<int8_t*>(p + offsetof(BlockQ6_K, scales));
    int v[kQK];
    for (size_t j = 0; j < 16; ++j) {
      sc[j] = static_cast<int8_t>(RoundClamped(inv * scale[j], -128, 127));
      const float dl = d * static_cast<float>(sc[j]);
      for (size_t i = 0; i < 16; ++i) v[16 * j + i] = dl != 0.0f ? RoundClamped(x[16 * j + i] / dl, -32, 31) + 32 : 32;
    }
    uint8_t* ql = p + offsetof(BlockQ6_K, ql);
    uint8_t* qh = p + offsetof(BlockQ6_K, qh);
    for (size_t h = 0; h < 2; ++h) {
      for (size_t l = 0; l < 32; ++l) {
        const int* e = v + 128 * h + l;  // e[0], e[32], e[64], e[96]
        ql[64 * h + l] = static_cast<uint8_t>((e[0] & 15) | (e[64] & 15) << 4);
        ql[64 * h + 32 + l] = static_cast<uint8_t>((e[32] & 15) | (e[96] & 15) << 4);
        qh[32 * h + l] = static_cast<uint8_t>(e[0] >> 4 | (e[32] >> 4) << 2 | (e[64] >> 4) << 4 | (e[96] >> 4) << 6);
      }
    }
  }
}

void DequantizeRowQ6_K(const void* in, size_t n, float* out) {
  const auto* p = static_cast<const uint8_t*>(in);
  for (size_t b = 0; b < n / kQK; ++b, p += sizeof(BlockQ6_K), out += kQK) {
    const float d = LoadF16(p + offsetof(BlockQ6_K, d));
    const auto* sc = reinterpret_cast<const int8_t*>(p + offsetof(BlockQ6_K, scales));
    // d * (sc * (v - 32)), the integer product first (as ggml's decoder; d * sc first could round
    // differently: 11 + 8 + 6 significant bits).
    for (size_t e = 0; e < kQK; ++e) out[e] = d * static_cast<float>(sc[e / 16] * (Q6KValue(p, e) - 32));
  }
}

}  // namespace fgemma
