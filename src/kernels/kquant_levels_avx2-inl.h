// The int8 levels of one block of 32 values, for the AVX2 K-quant kernel (kernels/matmul_kquant.cpp),
// read from the expanded row or unpacked in registers from the stored GGUF blocks: the same 32 bytes
// in element order either way (byte e = element e's level, as ExpandRows writes it), so a kernel
// reading the stored blocks gives the expanded kernel's bits while reading half the bytes (q5_0: 22
// bytes a block instead of 44; decode is bound by the bytes it reads).
// Highway multiple-inclusion header: include after hwy/highway.h, inside no namespace.
#if defined(FGEMMA_KERNELS_KQUANT_LEVELS_AVX2_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef FGEMMA_KERNELS_KQUANT_LEVELS_AVX2_INL_H_
#undef FGEMMA_KERNELS_KQUANT_LEVELS_AVX2_INL_H_
#else
#define FGEMMA_KERNELS_KQUANT_LEVELS_AVX2_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "hwy/highway.h"
#include "kernels/simd_common-inl.h"
#include "util/weight_types.h"

HWY_BEFORE_NAMESPACE();
namespace fgemma {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// A row source, read in groups of kGroup blocks: Prepare(g) computes what group g's blocks share
// (a super-block's scales), Block<j>(group, g, w, sc) gives block kGroup * g + j's levels and its
// scale vector (lanes 0-3 the first 16 values' scale, 4-7 the second's). The minimums' term of a
// stored q4_K row is its MinFold(t, nb): sum_b min_b * t[b] in the order of
// kernels/matmul_kquant.cpp's MinFold over the expanded row on AVX2 (8 blocks a vector, then the
// lane sum). Every float is computed as ExpandRows computes it.
struct NoGroup {};

HWY_INLINE __m256 HalfScales(float s0, float s1) { return _mm256_set_m128(_mm_set1_ps(s1), _mm_set1_ps(s0)); }

HWY_INLINE float F16At(const uint8_t* p) {  // exact, as LoadF16
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

// The f16 values at p, p + stride, ..., p + 7 * stride, widened exactly (as F16At each).
HWY_INLINE __m256 F16x8At(const uint8_t* p, size_t stride) {
  auto at = [&](size_t k) {
    uint16_t h;
    std::memcpy(&h, p + k * stride, 2);
    return static_cast<int>(h);
  };
  __m128i h = _mm_cvtsi32_si128(at(0));
  h = _mm_insert_epi16(h, at(1), 1);
  h = _mm_insert_epi16(h, at(2), 2);
  h = _mm_insert_epi16(h, at(3), 3);
  h = _mm_insert_epi16(h, at(4), 4);
  h = _mm_insert_epi16(h, at(5), 5);
  h = _mm_insert_epi16(h, at(6), 6);
  h = _mm_insert_epi16(h, at(7), 7);
  return _mm256_cvtph_ps(h);
}

// The expanded row: 32 levels a block, then the header (2 scales a block, then 1 minimum a block).
struct ExpandedLevels {
  static constexpr size_t kGroup = 1;
  using Group = NoGroup;
  const uint8_t* q;
  const uint8_t* scales;
  const uint8_t* mins;
  HWY_INLINE Group Prepare(size_t) const { return {}; }
  template <size_t kJ>
  HWY_INLINE void Block(const Group&, size_t b, __m256i& w, __m256& sc) const {
    w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * b));
    float s[2];
    std::memcpy(s, scales + 8 * b, 8);
    sc = HalfScales(s[0], s[1]);
  }
};

// The 32 nibbles of a 32-value block's 16 bytes in element order: element k < 16 is the low nibble
// of byte k, 16 + k the high one.
HWY_INLINE __m256i Nibbles32(const uint8_t* q) {
  const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
  return _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(qs), _mm_srli_epi16(qs, 4), 1),
                          _mm256_set1_epi8(15));
}

// 0xFF in byte e where bit e of the little-endian 32 bits at `qh` is set (byte e takes qh's byte
// e / 8, then its bit e % 8).
HWY_INLINE __m256i FifthBits(const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(bits)),
                                             _mm256_setr_epi64x(0, 0x0101010101010101LL, 0x0202020202020202LL,
                                                                0x0303030303030303LL));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
}

// q5_0: the fifth bit adds 16; the level is v - 16, which is the nibble where the bit is set and
// nibble | 0xF0 where not.
struct Q5_0Levels {
  static constexpr size_t kGroup = 1;
  using Group = NoGroup;
  const uint8_t* row;  // the stored row
  HWY_INLINE Group Prepare(size_t) const { return {}; }
  template <size_t kJ>
  HWY_INLINE void Block(const Group&, size_t b, __m256i& w, __m256& sc) const {
    const uint8_t* blk = row + b * sizeof(BlockQ5_0);
    w = _mm256_or_si256(Nibbles32(blk + offsetof(BlockQ5_0, q)),
                        _mm256_andnot_si256(FifthBits(blk + offsetof(BlockQ5_0, qh)), _mm256_set1_epi8(static_cast<char>(0xF0))));
    sc = _mm256_set1_ps(F16At(blk + offsetof(BlockQ5_0, d)));
  }
};

// q4_1 (kFive false) and q5_1: levels v (the nibble, plus 16 where the fifth bit is set), scale d,
// minimum m: one block a group, so the minimums' fold gathers 8 blocks' m a vector, then the tail
// one at a time, as MinFold reads them from the expanded row.
template <bool kFive>
struct Q1Levels {
  using BlockType = std::conditional_t<kFive, BlockQ5_1, BlockQ4_1>;
  static constexpr size_t kGroup = 1;
  using Group = NoGroup;
  const uint8_t* row;
  HWY_INLINE Group Prepare(size_t) const { return {}; }
  template <size_t kJ>
  HWY_INLINE void Block(const Group&, size_t b, __m256i& w, __m256& sc) const {
    const uint8_t* blk = row + b * sizeof(BlockType);
    w = Nibbles32(blk + offsetof(BlockType, q));
    if constexpr (kFive) {
      w = _mm256_or_si256(w, _mm256_and_si256(FifthBits(blk + offsetof(BlockQ5_1, qh)), _mm256_set1_epi8(16)));
    }
    sc = _mm256_set1_ps(F16At(blk + offsetof(BlockType, d)));
  }
  HWY_INLINE float MinFold(const float* t, size_t nb) const {
    __m256 acc = _mm256_setzero_ps();
    size_t b = 0;
    for (; b + 8 <= nb; b += 8) {
      // The 8 blocks' f16 minimums gathered into one vector and widened at once (exact): through
      // a float array on the stack, 8 scalar stores could not forward to the vector load.
      acc = _mm256_fmadd_ps(F16x8At(row + b * sizeof(BlockType) + offsetof(BlockType, m), sizeof(BlockType)),
                            _mm256_loadu_ps(t + b), acc);
    }
    float sum = SumOfVector(hn::Full256<float>(), hn::Vec256<float>{acc});
    for (; b < nb; ++b) sum = std::fma(F16At(row + b * sizeof(BlockType) + offsetof(BlockType, m)), t[b], sum);
    return sum;
  }
};

// q4_K's 8 six-bit scales (kMins false) or minimums (true) of the super-block at `blk` as floats:
// KQuantScaleMin's packing, j < 4: scales[j] & 63 (minimums: scales[j + 4] & 63); j >= 4:
// (scales[j + 4] & 15) | (scales[j - 4] >> 6) << 4 (minimums: scales[j + 4] >> 4 | scales[j] >> 6 << 4).
template <bool kMins>
HWY_INLINE __m256 Q4_KSixBits(const uint8_t* blk) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(BlockQ4_K, scales)));
  const __m128i first = kMins ? _mm_srli_si128(v, 4) : v;  // bytes 0-3: scales[0..3] (mins: [4..7])
  const __m128i last = _mm_srli_si128(v, 8);                // bytes 0-3: scales[8..11]
  const __m128i low = _mm_and_si128(first, _mm_set1_epi8(63));
  const __m128i top = _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(first, 6), _mm_set1_epi8(3)), 4);
  const __m128i bottom = kMins ? _mm_and_si128(_mm_srli_epi16(last, 4), _mm_set1_epi8(15)) : _mm_and_si128(last, _mm_set1_epi8(15));
  const __m128i bytes = _mm_unpacklo_epi32(low, _mm_or_si128(bottom, top));  // j = 0..7 in bytes 0..7
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
}

// q4_K (kFive false) and q5_K: sub-block j of a super-block is chunk j / 2's 32 bytes, low nibbles
// (j even) or high, plus (q5_K) bit j of qh[l] as the fifth bit; its scale d * sc_j, its minimum
// -(dmin * m_j). The two share the header's layout (d, dmin, scales[12]).
template <bool kFive>
struct QKLevels {
  using BlockType = std::conditional_t<kFive, BlockQ5_K, BlockQ4_K>;
  static constexpr size_t kGroup = 8;
  struct Group {
    __m256 scale;  // d * sc_j in lane j
  };
  const uint8_t* row;
  HWY_INLINE Group Prepare(size_t g) const {
    const uint8_t* blk = row + g * sizeof(BlockType);
    return Group{_mm256_mul_ps(_mm256_set1_ps(F16At(blk + offsetof(BlockQ4_K, d))), Q4_KSixBits<false>(blk))};
  }
  template <size_t kJ>
  HWY_INLINE void Block(const Group& group, size_t g, __m256i& w, __m256& sc) const {
    const uint8_t* blk = row + g * sizeof(BlockType);
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + offsetof(BlockType, q) + 32 * (kJ / 2)));
    w = _mm256_and_si256(_mm256_srli_epi16(v, 4 * (kJ % 2)), _mm256_set1_epi8(15));
    if constexpr (kFive) {
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + offsetof(BlockQ5_K, qh)));
      w = _mm256_or_si256(w, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, kJ), _mm256_set1_epi8(1)), 4));
    }
    sc = _mm256_permutevar8x32_ps(group.scale, _mm256_set1_epi32(kJ));
  }
  HWY_INLINE float MinFold(const float* t, size_t nb) const {
    __m256 acc = _mm256_setzero_ps();
    for (size_t s = 0; s < nb / 8; ++s) {
      const uint8_t* blk = row + s * sizeof(BlockType);
      const __m256 m = _mm256_mul_ps(_mm256_set1_ps(F16At(blk + offsetof(BlockQ4_K, dmin))), Q4_KSixBits<true>(blk));
      acc = _mm256_fmadd_ps(_mm256_xor_ps(m, _mm256_set1_ps(-0.0f)), _mm256_loadu_ps(t + 8 * s), acc);
    }
    return SumOfVector(hn::Full256<float>(), hn::Vec256<float>{acc});  // nb is a multiple of 8
  }
};
using Q4_KLevels = QKLevels<false>;
using Q5_KLevels = QKLevels<true>;

// q6_K: sub-block j = 4h + i of a super-block: 4 low bits from ql[64h + 32 (i % 2) + l] (low nibble
// for i < 2, high for i >= 2), 2 high bits from qh[32h + l] >> 2i; the level is v - 32; its two
// halves' scales d * scales[2j] and d * scales[2j + 1].
struct Q6_KLevels {
  static constexpr size_t kGroup = 8;
  struct Group {
    __m256 scale[2];  // d * scales[0..7], d * scales[8..15]
  };
  const uint8_t* row;
  HWY_INLINE Group Prepare(size_t g) const {
    const uint8_t* blk = row + g * sizeof(BlockQ6_K);
    const __m256 d = _mm256_set1_ps(F16At(blk + offsetof(BlockQ6_K, d)));
    const __m128i scales = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(BlockQ6_K, scales)));
    return Group{{_mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(scales))),
                  _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(scales, 8))))}};
  }
  template <size_t kJ>
  HWY_INLINE void Block(const Group& group, size_t g, __m256i& w, __m256& sc) const {
    constexpr size_t h = kJ / 4, i = kJ % 4;
    const uint8_t* blk = row + g * sizeof(BlockQ6_K);
    const __m256i ql = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + offsetof(BlockQ6_K, ql) + 64 * h + 32 * (i % 2)));
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + offsetof(BlockQ6_K, qh) + 32 * h));
    const __m256i low = _mm256_and_si256(_mm256_srli_epi16(ql, 4 * (i / 2)), _mm256_set1_epi8(15));
    const __m256i top = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * i), _mm256_set1_epi8(3));
    w = _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(top, 4)), _mm256_set1_epi8(32));
    // Scales 2j and 2j + 1 of the 16: lanes 2 (j % 4) and 2 (j % 4) + 1 of vector j / 4.
    const __m256i index = _mm256_setr_epi32(2 * (kJ % 4), 2 * (kJ % 4), 2 * (kJ % 4), 2 * (kJ % 4),
                                            2 * (kJ % 4) + 1, 2 * (kJ % 4) + 1, 2 * (kJ % 4) + 1, 2 * (kJ % 4) + 1);
    sc = _mm256_permutevar8x32_ps(group.scale[kJ / 4], index);
  }
};
#endif

}  // namespace HWY_NAMESPACE
}  // namespace fgemma
HWY_AFTER_NAMESPACE();

#endif  // FGEMMA_KERNELS_KQUANT_LEVELS_AVX2_INL_H_ toggle
