// AVX2 kernels for the quantized weights in 8-row panels (the layout in kernels/matmul_internal.h,
// kAvx2PanelRows), included by kernels/matmul_quant.cpp inside its AVX2 / AVX3 target namespace.
//
// One 256-bit vector is one group (4 values) of a block for the panel's 8 rows; the token's 4
// quantized activations of that group are broadcast to every lane, so a u8 x s8 maddubs gives each
// row's partial dot in two int16 lanes. A block's 8 groups sum in integers (exact) before one
// float scaling per block, row and token:
//   acc = fma(float(dot_b), dw_b * dx_b, acc)
// which is MatMulInterleavedReference's fold, so every output has the same bits whatever the
// token tile or thread split (and the same as the AVX-512 VNNI panels compute).
//   q4_0: the nibbles as stored (0..15) are unsigned: maddubs takes them as they are, and the 8
//         groups' int16 sums add without overflow (8 x 2 x 15 x 127 = 30,480 < 32,767) before one
//         madd into int32; the block's int32 sum starts from -8 * s_b (the packed record's start).
//   q8_0: signed values: maddubs(|w|, sign(x, w)) (|w| <= 128, |x| <= 127: a pair sums to at most
//         32,512, so no saturation) and madd into int32 per group.
//   q5_0: the q4_0 nibbles plus a plane of fifth bits (bit j of byte 4r + i: element 4j + i of row r),
//         so level + 16 = nibble | 16 * bit is unsigned (0..31): maddubs as q4_0, but only 4 groups'
//         int16 sums fit (4 x 2 x 31 x 127 = 31,496), so two madds a block; the sum starts from
//         -16 s_b. This is the per-block fold of MatMulKQuantArmReference (q5_0's scale is d alone).
//   q6_K: levels + 32 (0..63) from nibbles and a plane of bits 4, 5; a scale per 16 values, so each
//         half block is its own sum (|q| x sign(x, q), 4 groups in int16) and its own fold step.
// Against the stored-layout tile (one row's block a vector, then a float per 4 values) this takes
// about a third of the instructions a multiply-add for q4_0 and two thirds for q8_0.
//
// Highway multiple-inclusion header: include after hwy/highway.h, inside no namespace.
#if defined(FGEMMA_KERNELS_QUANT_PANELS_AVX2_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef FGEMMA_KERNELS_QUANT_PANELS_AVX2_INL_H_
#undef FGEMMA_KERNELS_QUANT_PANELS_AVX2_INL_H_
#else
#define FGEMMA_KERNELS_QUANT_PANELS_AVX2_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/matmul_internal.h"
#include "kernels/simd_common-inl.h"

HWY_BEFORE_NAMESPACE();
namespace fgemma {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
template <DType kType>
struct Avx2PanelKernel {
  static constexpr size_t kRows = kernels_internal::kAvx2PanelRows;
  static constexpr bool kQ4 = kType == DType::kQ4_0, kQ5 = kType == DType::kQ5_0;
  // The level panels: unsigned levels with float scales (and minimums) in each block; q6_K's levels
  // have six bits and a scale per 16 values.
  static constexpr bool kLevels = kernels_internal::LevelPanelRowBytes(kType) > 0;
  static constexpr bool kSix = kType == DType::kQ6_K;
  static constexpr bool kMins = kernels_internal::ExpandedHasMins(kType);
  static constexpr bool kFifth = kernels_internal::HasFifthBit(kType);
  // Bytes of one block's values for the panel's rows, and where a token's block sum starts.
  static constexpr size_t kGroupBytes = kLevels ? kRows * kernels_internal::LevelPanelRowBytes(kType)
                                               : kRows * (DTypeBlockBytes(kType) - kQuantBlockScaleBytes);
  static constexpr size_t kBsumIndex = kQ4 || kQ5 ? 1 : 0;  // -8 s_b (q4_0; q5_0 doubles it), -128 s_b unused

  // The block's int32 dot products (lane = row) of kT tokens, from the block's values at qb.
  template <size_t kT>
  static HWY_INLINE void BlockDots(const uint8_t* qb, const uint8_t* const (&x)[kT], size_t q_at, size_t start_at,
                                   __m256i (&dots)[kT]) {
    const __m256i ones = _mm256_set1_epi16(1);
    if constexpr (kFifth) {
      const __m256i low = _mm256_set1_epi8(15), fifth = _mm256_set1_epi8(16);
      const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb + 128));
      __m256i sums[2][kT];
#pragma GCC unroll 8
      for (size_t i = 0; i < 8; ++i) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb + 32 * (i % 4)));
        const __m256i nib = _mm256_and_si256(i < 4 ? v : _mm256_srli_epi16(v, 4), low);
        // Bit i of each byte to bit 4 (16-bit shifts: the mask drops what crossed a byte).
        const __m256i high = i <= 4 ? _mm256_slli_epi16(bits, static_cast<int>(4 - i))
                                    : _mm256_srli_epi16(bits, static_cast<int>(i - 4));
        const __m256i g = _mm256_or_si256(nib, _mm256_and_si256(high, fifth));
#pragma GCC unroll 8
        for (size_t t = 0; t < kT; ++t) {
          int32_t four;
          std::memcpy(&four, x[t] + q_at + 4 * i, 4);
          const __m256i p = _mm256_maddubs_epi16(g, _mm256_set1_epi32(four));
          sums[i / 4][t] = i % 4 == 0 ? p : _mm256_add_epi16(sums[i / 4][t], p);
        }
      }
#pragma GCC unroll 8
      for (size_t t = 0; t < kT; ++t) {
        int32_t start;
        std::memcpy(&start, x[t] + start_at, 4);
        const __m256i both = _mm256_add_epi32(_mm256_madd_epi16(sums[0][t], ones), _mm256_madd_epi16(sums[1][t], ones));
        dots[t] = kQ5 ? _mm256_add_epi32(both, _mm256_set1_epi32(2 * start)) : both;  // q5_0: level + 16
      }
    } else if constexpr (kQ4 || kMins) {
      const __m256i low = _mm256_set1_epi8(15);
      __m256i sums[kT];
#pragma GCC unroll 8
      for (size_t i = 0; i < 8; ++i) {
        // Group i < 4: the low nibbles of vector i; group i >= 4: the high nibbles of vector i - 4.
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb + 32 * (i % 4)));
        const __m256i g = _mm256_and_si256(i < 4 ? v : _mm256_srli_epi16(v, 4), low);
#pragma GCC unroll 8
        for (size_t t = 0; t < kT; ++t) {
          int32_t four;
          std::memcpy(&four, x[t] + q_at + 4 * i, 4);
          const __m256i p = _mm256_maddubs_epi16(g, _mm256_set1_epi32(four));
          sums[t] = i == 0 ? p : _mm256_add_epi16(sums[t], p);
        }
      }
#pragma GCC unroll 8
      for (size_t t = 0; t < kT; ++t) {
        int32_t start;
        std::memcpy(&start, x[t] + start_at, 4);
        const __m256i dot = _mm256_madd_epi16(sums[t], ones);
        dots[t] = kQ4 ? _mm256_add_epi32(dot, _mm256_set1_epi32(start)) : dot;  // q4_0: w + 8
      }
    } else {
#pragma GCC unroll 8
      for (size_t i = 0; i < 8; ++i) {
        const __m256i g = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb + 32 * i));
        const __m256i g_abs = _mm256_abs_epi8(g);
#pragma GCC unroll 8
        for (size_t t = 0; t < kT; ++t) {
          int32_t four;
          std::memcpy(&four, x[t] + q_at + 4 * i, 4);
          const __m256i signed_x = _mm256_sign_epi8(_mm256_set1_epi32(four), g);
          const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(g_abs, signed_x), ones);
          dots[t] = i == 0 ? p : _mm256_add_epi32(dots[t], p);
        }
      }
    }
  }

  // q6_K: the int32 dot products of the block's half `h` (16 values, groups 4h .. 4h + 3) of kT
  // tokens. A level + 32 is the nibble with bits 4, 5 from its plane; the signed value q = level - 32
  // (|q| <= 32) multiplies as |q| x sign(x, q), so 4 groups' int16 sums stay within range
  // (4 x 2 x 32 x 127 = 32,512) and one madd gives the half's sum.
  template <size_t kT>
  static HWY_INLINE void HalfDots6(const uint8_t* qb, const uint8_t* const (&x)[kT], size_t q_at, size_t h,
                                   __m256i (&dots)[kT]) {
    const __m256i low = _mm256_set1_epi8(15), bits45 = _mm256_set1_epi8(48), offset = _mm256_set1_epi8(32);
    const __m256i plane = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb + 128 + 32 * h));
    __m256i sums[kT];
#pragma GCC unroll 4
    for (size_t j = 0; j < 4; ++j) {
      const size_t i = 4 * h + j;  // the group
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb + 32 * j));
      const __m256i nib = _mm256_and_si256(h == 0 ? v : _mm256_srli_epi16(v, 4), low);
      // Bits 2j, 2j + 1 of each plane byte to bits 4, 5 (16-bit shifts: the mask drops what crossed a byte).
      const __m256i high = j <= 2 ? _mm256_slli_epi16(plane, static_cast<int>(4 - 2 * j)) : _mm256_srli_epi16(plane, 2);
      const __m256i q = _mm256_sub_epi8(_mm256_or_si256(nib, _mm256_and_si256(high, bits45)), offset);
      const __m256i q_abs = _mm256_abs_epi8(q);
#pragma GCC unroll 8
      for (size_t t = 0; t < kT; ++t) {
        int32_t four;
        std::memcpy(&four, x[t] + q_at + 4 * i, 4);
        const __m256i p = _mm256_maddubs_epi16(q_abs, _mm256_sign_epi8(_mm256_set1_epi32(four), q));
        sums[t] = j == 0 ? p : _mm256_add_epi16(sums[t], p);
      }
    }
    const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 8
    for (size_t t = 0; t < kT; ++t) dots[t] = _mm256_madd_epi16(sums[t], ones);
  }

  // acc[t] = fma(float(dots[t]), scale * dx_t, acc[t]) with the tokens' block scales dx_t at dx_at:
  // the fold step of every type.
  template <size_t kT>
  static HWY_INLINE void FoldDots(const __m256i (&dots)[kT], __m256 scale, const uint8_t* const (&x)[kT], size_t dx_at,
                                  __m256 (&acc)[kT]) {
#pragma GCC unroll 8
    for (size_t t = 0; t < kT; ++t) {
      float dx;
      std::memcpy(&dx, x[t] + dx_at, 4);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots[t]), _mm256_mul_ps(scale, _mm256_set1_ps(dx)), acc[t]);
    }
  }

  // Rows [row, row + valid) of the panel at `panel` x tokens [token, token + kT).
  template <size_t kT>
  static HWY_NOINLINE void Tile(const TileJob& job, const uint8_t* panel, size_t scale_bytes, size_t row,
                                size_t valid, size_t token) {
    const size_t nb = job.cols / kQuantBlockValues;
    const uint8_t* scales = panel;
    const uint8_t* q = panel + scale_bytes;
    const uint8_t* x[kT];
    for (size_t t = 0; t < kT; ++t) x[t] = job.token(token + t);
    __m256 acc[kT];
    for (size_t t = 0; t < kT; ++t) acc[t] = _mm256_setzero_ps();
#pragma GCC unroll 1
    for (size_t b = 0; b < nb; ++b) {
      const uint8_t* qb = q + b * kGroupBytes;
      if constexpr (kT == 1) {
        // Decode streams the panel once, faster than the hardware prefetcher runs ahead of a core.
        constexpr size_t kAhead = 6144;
        for (size_t line = 0; line < kGroupBytes; line += 64) hwy::Prefetch(qb + kAhead + line);
      }
      if constexpr (kSix) {
        // MatMulKQuantArmReference's fold with parts = 2: each half's scaled dot in turn.
        constexpr size_t kScalesAt = kGroupBytes - 2 * 4 * kRows;  // float scale[2][8]
#pragma GCC unroll 2
        for (size_t h = 0; h < 2; ++h) {
          __m256i dots[kT];
          HalfDots6<kT>(qb, x, b * 32, h, dots);
          FoldDots<kT>(dots, _mm256_loadu_ps(reinterpret_cast<const float*>(qb + kScalesAt + 4 * kRows * h)), x,
                       job.d8_offset + b * 32, acc);
        }
        continue;
      }
      __m256i dots[kT];
      BlockDots<kT>(qb, x, b * 32, job.bsum_offset + (b * 2 + kBsumIndex) * 4, dots);
      if constexpr (kMins) {
        // MatMulKQuantArmReference's fold: the block's scaled dot, then its minimum times the token's
        // t_b = dx_b * s_b (BlockMinWeight, KQuantMinWeights' value).
        constexpr size_t kScalesAt = kGroupBytes - 2 * 4 * kRows;  // float scale[8], then min[8]
        FoldDots<kT>(dots, _mm256_loadu_ps(reinterpret_cast<const float*>(qb + kScalesAt)), x, job.d8_offset + b * 32,
                     acc);
        const __m256 min = _mm256_loadu_ps(reinterpret_cast<const float*>(qb + kScalesAt + 4 * kRows));
#pragma GCC unroll 8
        for (size_t t = 0; t < kT; ++t) {
          const float t_b = kernels_internal::BlockMinWeight(x[t], job.d8_offset, job.bsum_offset, b);
          acc[t] = _mm256_fmadd_ps(min, _mm256_set1_ps(t_b), acc[t]);
        }
        continue;
      }
      FoldDots<kT>(dots, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + b * 16))), x,
                   job.d8_offset + b * 32, acc);
    }
    if (valid == kRows) {
      for (size_t t = 0; t < kT; ++t) _mm256_storeu_ps(job.out(row, token + t), acc[t]);
      return;
    }
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(valid)), lanes);
    for (size_t t = 0; t < kT; ++t) _mm256_maskstore_ps(job.out(row, token + t), mask, acc[t]);
  }

  // Tokens [t, t_end) in tiles of kT, then halves.
  template <size_t kT>
  static HWY_INLINE void Tokens(const TileJob& job, const uint8_t* panel, size_t scale_bytes, size_t row, size_t valid,
                                size_t t, size_t t_end) {
    for (; t + kT <= t_end; t += kT) Tile<kT>(job, panel, scale_bytes, row, valid, t);
    if constexpr (kT > 1) Tokens<kT / 2>(job, panel, scale_bytes, row, valid, t, t_end);
  }

  // Rows [row_begin, row_end) (row_begin a multiple of kRows) of the panels at `panels`, blocked twice:
  // panels in chunks that stay in L2 (~128 KB), and within a chunk tokens in blocks whose records
  // stay in L1 (~24 KB) while the chunk's panels pass over them. Each token tile then reads its
  // activations from L1 and each panel comes from L2 once per token block (with the records in L2
  // instead, a 512-token prefill ran ~45 % slower a token than 16 tokens did).
  static void Run(const TileJob& job, const uint8_t* panels, size_t row_begin, size_t row_end, size_t num_tokens) {
    const kernels_internal::PanelFormat f = kernels_internal::Avx2PanelFormat();
    const size_t panel_bytes = f.panel_bytes(kType, job.cols), scale_bytes = f.scale_bytes(kType, job.cols);
    constexpr size_t kTileTokens = 4;
    const size_t token_block = TokensPerBlock(job.x_stride, kTileTokens, 24 * 1024);
    const size_t chunk_rows = HWY_MAX(size_t{1}, (128 * 1024) / panel_bytes) * kRows;
    for (size_t r0 = row_begin; r0 < row_end; r0 += chunk_rows) {
      const size_t r1 = HWY_MIN(row_end, r0 + chunk_rows);
      for (size_t t0 = 0; t0 < num_tokens; t0 += token_block) {
        const size_t t1 = HWY_MIN(num_tokens, t0 + token_block);
        for (size_t r = r0; r < r1; r += kRows) {
          const uint8_t* panel = panels + r / kRows * panel_bytes;
          Tokens<kTileTokens>(job, panel, scale_bytes, r, HWY_MIN(kRows, r1 - r), t0, t1);
        }
      }
    }
  }
};

#endif  // HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3

}  // namespace HWY_NAMESPACE
}  // namespace fgemma
HWY_AFTER_NAMESPACE();

#endif  // FGEMMA_KERNELS_QUANT_PANELS_AVX2_INL_H_ toggle
