// MatMul for q8_0 / q4_0 weights on activations quantized per 32-block to int8 (see QuantLayout in
// matmul_internal.h), plus the activation packing.
//
// Math (all targets): y = sum_b dw_b * dx_b * sum_{k in b} wq_k * xq_k, the inner sums exact in
// int32, then scaled and accumulated in float32. Against the float reference (dequantized weights
// times unquantized float activations) the only extra error is the activation rounding:
// |x_k - dx_b xq_k| <= dx_b / 2 = amax_b / 254, so |y - ref| <= sum_b (amax_b / 254) sum_{k in b} |w_k|
// plus float32 summation error. Measured (tests: QuantizedAccuracyVsFloat, 256x640, 8 tokens):
// relative RMS error vs the float reference 0.54% (q8_0) / 0.52% (q4_0) of the output RMS on
// Gaussian activations, max 2.1%; with 30x outliers in 1/64 of the channels (like real hidden
// states) 1.2% / 1.3% RMS, max 5.4%. Identical on every target (the integer part is exact).
//
// Kernels:
//   AVX3_DL (AVX-512 VNNI): 64 bytes = two blocks per vector; vpdpbusd on (w + c) as u8 x xq as s8,
//                           each int32 lane starting from the packed correction -c * sum(xq);
//                           4 rows x 4 tokens register tile.
//   AVX2, AVX3:             one block per 256-bit vector; maddubs(|w|, sign(xq, w)) + madd.
//   NEON:                   vdotq_s32 when built with the dotprod extension, else vmull_s8/vpadalq.
//   Others (SSE4, scalar):  portable Highway code, int16 widening multiply-accumulate.
#include "kernels/simd_config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/matmul_quant.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_internal.h"
#include "kernels/simd_common-inl.h"

HWY_BEFORE_NAMESPACE();
namespace fgemma {
namespace HWY_NAMESPACE {
namespace {

template <DType kType>
constexpr size_t kBlockBytes = kType == DType::kQ8_0 ? 34 : 18;

HWY_INLINE uint16_t LoadU16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

// out[r] = f16 scale at rows[r] (the block start), r < kR, via vector conversion.
template <size_t kR>
HWY_INLINE void LoadScales(const uint8_t* const (&blocks)[kR], float* out) {
  const hn::CappedTag<float, 4> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  constexpr size_t kPadded = (kR + 3) / 4 * 4;
  HWY_ALIGN hwy::float16_t h[kPadded] = {};
  HWY_ALIGN float f[kPadded];
  for (size_t r = 0; r < kR; ++r) std::memcpy(&h[r], blocks[r], 2);
  for (size_t i = 0; i < kPadded; i += hn::Lanes(df)) hn::Store(hn::PromoteTo(df, hn::Load(dh, h + i)), df, f + i);
  for (size_t r = 0; r < kR; ++r) out[r] = f[r];
}

HWY_INLINE TileJob QuantJob(const TensorView& w, const Activations& a, float* y, size_t y_stride) {
  const kernels_internal::QuantLayout layout = kernels_internal::QuantLayoutFor(w.cols);
  TileJob job;
  job.w = static_cast<const uint8_t*>(w.data);
  job.w_row_bytes = w.row_bytes();
  job.cols = w.cols;
  job.x = static_cast<const uint8_t*>(a.packed);
  job.x_stride = a.packed_stride;
  job.y = y;
  job.y_stride = y_stride;
  job.d8_offset = layout.d8_offset;
  job.corr_offset = layout.corr_offset;
  return job;
}

#if HWY_TARGET == HWY_AVX3_DL
// ---------------------------------------------------------------- AVX-512 VNNI: two blocks/vector
#pragma GCC push_options
#pragma GCC target("avx512vnni")

// Weights of blocks b and b+1 (at blk and blk + kBlockBytes) as unsigned bytes w + c.
template <DType kType>
HWY_INLINE __m512i LoadPairU8(const uint8_t* blk) {
  if constexpr (kType == DType::kQ8_0) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 34 + 2));
    return _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), _mm512_set1_epi8(-128));
  } else {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 18 + 2));
    const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_broadcastsi128_si256(lo)),
                                            _mm256_broadcastsi128_si256(hi), 1);
    // 128-bit lanes: [lo, lo>>4, hi, hi>>4] & 15 = elements 0..15, 16..31 of each block.
    const __m512i shifts = _mm512_set_epi64(0x0004000400040004LL, 0x0004000400040004LL, 0, 0,
                                            0x0004000400040004LL, 0x0004000400040004LL, 0, 0);
    return _mm512_and_si512(_mm512_srlv_epi16(both, shifts), _mm512_set1_epi8(15));
  }
}

// The last block alone (upper 256 bits zero).
template <DType kType>
HWY_INLINE __m512i LoadLastU8(const uint8_t* blk) {
  if constexpr (kType == DType::kQ8_0) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
    return _mm512_zextsi256_si512(_mm256_xor_si256(v, _mm256_set1_epi8(-128)));
  } else {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
    const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(v), _mm_srli_epi16(v, 4), 1);
    return _mm512_zextsi256_si512(_mm256_and_si256(both, _mm256_set1_epi8(15)));
  }
}

// [d0 x 8, d1 x 8] from two f16 scales.
HWY_INLINE __m512 PairScales(uint16_t h0, uint16_t h1) {
  const __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(h0 | (static_cast<uint32_t>(h1) << 16))));
  const __m512i idx = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(f));
}

template <DType kType>
struct QuantKernel {
  static constexpr size_t kRows = 4, kTokens = 4;

  template <size_t kR, size_t kT>
  static HWY_NOINLINE void Tile(const TileJob& job, size_t row, size_t token) {
    constexpr size_t kBB = kBlockBytes<kType>;
    const hn::Full512<float> df;
    using V = hn::Vec512<float>;
    const size_t nb = job.cols / 32;
    const uint8_t* wr[kR];
    for (size_t r = 0; r < kR; ++r) wr[r] = job.row(row + r);
    const uint8_t* xt[kT];
    for (size_t t = 0; t < kT; ++t) xt[t] = job.token(token + t);

    V acc[kR][kT];
    for (size_t r = 0; r < kR; ++r) {
      for (size_t t = 0; t < kT; ++t) acc[r][t] = hn::Zero(df);
    }
    size_t b = 0;
    for (; b + 2 <= nb; b += 2) {
      __m512i wu[kR];
      __m512 dw[kR];
      for (size_t r = 0; r < kR; ++r) {
        const uint8_t* blk = wr[r] + b * kBB;
        wu[r] = LoadPairU8<kType>(blk);
        dw[r] = PairScales(LoadU16(blk), LoadU16(blk + kBB));
      }
      for (size_t t = 0; t < kT; ++t) {
        const uint8_t* x = xt[t];
        const __m512i xq = _mm512_loadu_si512(x + b * 32);
        const __m512i corr = _mm512_loadu_si512(x + job.corr_offset + b * 32);
        const __m512 dx = _mm512_loadu_ps(x + job.d8_offset + b * 32);
        for (size_t r = 0; r < kR; ++r) {
          const __m512i dot = _mm512_dpbusd_epi32(corr, wu[r], xq);
          acc[r][t].raw = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw[r], dx), acc[r][t].raw);
        }
      }
    }
    if (b < nb) {  // odd block count: the last block in the low half, masked token loads
      __m512i wu[kR];
      __m512 dw[kR];
      for (size_t r = 0; r < kR; ++r) {
        const uint8_t* blk = wr[r] + b * kBB;
        wu[r] = LoadLastU8<kType>(blk);
        dw[r] = PairScales(LoadU16(blk), 0);
      }
      for (size_t t = 0; t < kT; ++t) {
        const uint8_t* x = xt[t];
        const __m512i xq = _mm512_maskz_loadu_epi32(0xFF, x + b * 32);
        const __m512i corr = _mm512_maskz_loadu_epi32(0xFF, x + job.corr_offset + b * 32);
        const __m512 dx = _mm512_maskz_loadu_ps(0xFF, x + job.d8_offset + b * 32);
        for (size_t r = 0; r < kR; ++r) {
          const __m512i dot = _mm512_dpbusd_epi32(corr, wu[r], xq);
          acc[r][t].raw = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw[r], dx), acc[r][t].raw);
        }
      }
    }
    StoreTileSums<kR, kT>(df, acc, job.out(row, token), job.y_stride);
  }
};

#pragma GCC pop_options

#elif HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
// ---------------------------------------------------------------- AVX2: one block per vector

// Weights of one block as signed bytes.
template <DType kType>
HWY_INLINE __m256i LoadBlockS8(const uint8_t* blk) {
  if constexpr (kType == DType::kQ8_0) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
  } else {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
    const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(v), _mm_srli_epi16(v, 4), 1);
    return _mm256_sub_epi8(_mm256_and_si256(both, _mm256_set1_epi8(15)), _mm256_set1_epi8(8));
  }
}

template <DType kType>
struct QuantKernel {
  static constexpr size_t kRows = 2, kTokens = 4;

  template <size_t kR, size_t kT>
  static HWY_NOINLINE void Tile(const TileJob& job, size_t row, size_t token) {
    constexpr size_t kBB = kBlockBytes<kType>;
    const hn::Full256<float> df;
    using V = hn::Vec256<float>;
    const size_t nb = job.cols / 32;
    const uint8_t* wr[kR];
    for (size_t r = 0; r < kR; ++r) wr[r] = job.row(row + r);
    const uint8_t* xt[kT];
    for (size_t t = 0; t < kT; ++t) xt[t] = job.token(token + t);
    const __m256i ones = _mm256_set1_epi16(1);

    V acc[kR][kT];
    for (size_t r = 0; r < kR; ++r) {
      for (size_t t = 0; t < kT; ++t) acc[r][t] = hn::Zero(df);
    }
    for (size_t b = 0; b < nb; ++b) {
      __m256i ws[kR], wabs[kR];
      __m256 dw[kR];
      for (size_t r = 0; r < kR; ++r) {
        const uint8_t* blk = wr[r] + b * kBB;
        ws[r] = LoadBlockS8<kType>(blk);
        wabs[r] = _mm256_sign_epi8(ws[r], ws[r]);
        dw[r] = _mm256_set1_ps(_cvtsh_ss(LoadU16(blk)));
      }
      for (size_t t = 0; t < kT; ++t) {
        const uint8_t* x = xt[t];
        const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + b * 32));
        const __m256 dx = _mm256_loadu_ps(reinterpret_cast<const float*>(x + job.d8_offset + b * 32));
        for (size_t r = 0; r < kR; ++r) {
          // |w| * (sign(w) x) never saturates the int16 pair sums: 2 * 128 * 127 < 32768.
          const __m256i p16 = _mm256_maddubs_epi16(wabs[r], _mm256_sign_epi8(xq, ws[r]));
          const __m256i p32 = _mm256_madd_epi16(p16, ones);
          acc[r][t].raw = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p32), _mm256_mul_ps(dw[r], dx), acc[r][t].raw);
        }
      }
    }
    StoreTileSums<kR, kT>(df, acc, job.out(row, token), job.y_stride);
  }
};

#elif HWY_TARGET == HWY_NEON
// ---------------------------------------------------------------- NEON: one block = two q registers

template <DType kType>
HWY_INLINE void LoadBlockS8(const uint8_t* blk, int8x16_t* lo, int8x16_t* hi) {
  if constexpr (kType == DType::kQ8_0) {
    *lo = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 2));
    *hi = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 18));
  } else {
    const uint8x16_t v = vld1q_u8(blk + 2);
    const int8x16_t eight = vdupq_n_s8(8);
    *lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(15))), eight);
    *hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), eight);
  }
}

// Four int32 partial sums of w . x over 32 int8 pairs.
HWY_INLINE int32x4_t DotBlock(int8x16_t wlo, int8x16_t whi, int8x16_t xlo, int8x16_t xhi) {
#if defined(__ARM_FEATURE_DOTPROD)
  return vdotq_s32(vdotq_s32(vdupq_n_s32(0), wlo, xlo), whi, xhi);
#else
  // int16 pair sums cannot overflow: |w| <= 128, |x| <= 127.
  int16x8_t p0 = vmull_s8(vget_low_s8(wlo), vget_low_s8(xlo));
  p0 = vmlal_s8(p0, vget_high_s8(wlo), vget_high_s8(xlo));
  int16x8_t p1 = vmull_s8(vget_low_s8(whi), vget_low_s8(xhi));
  p1 = vmlal_s8(p1, vget_high_s8(whi), vget_high_s8(xhi));
  return vpadalq_s16(vpaddlq_s16(p0), p1);
#endif
}

template <DType kType>
struct QuantKernel {
#if HWY_ARCH_ARM_A64
  static constexpr size_t kRows = 4, kTokens = 2;
#else
  static constexpr size_t kRows = 2, kTokens = 2;
#endif

  template <size_t kR, size_t kT>
  static HWY_NOINLINE void Tile(const TileJob& job, size_t row, size_t token) {
    constexpr size_t kBB = kBlockBytes<kType>;
    const hn::Full128<float> df;
    using V = hn::Vec128<float>;
    const size_t nb = job.cols / 32;
    const uint8_t* wr[kR];
    for (size_t r = 0; r < kR; ++r) wr[r] = job.row(row + r);
    const uint8_t* xt[kT];
    for (size_t t = 0; t < kT; ++t) xt[t] = job.token(token + t);

    V acc[kR][kT];
    for (size_t r = 0; r < kR; ++r) {
      for (size_t t = 0; t < kT; ++t) acc[r][t] = hn::Zero(df);
    }
    for (size_t b = 0; b < nb; ++b) {
      int8x16_t wlo[kR], whi[kR];
      const uint8_t* blk[kR];
      float dw[kR];
      for (size_t r = 0; r < kR; ++r) {
        blk[r] = wr[r] + b * kBB;
        LoadBlockS8<kType>(blk[r], &wlo[r], &whi[r]);
      }
      LoadScales(blk, dw);
      for (size_t t = 0; t < kT; ++t) {
        const int8_t* xq = reinterpret_cast<const int8_t*>(xt[t] + b * 32);
        const int8x16_t xlo = vld1q_s8(xq), xhi = vld1q_s8(xq + 16);
        float dx;
        std::memcpy(&dx, xt[t] + job.d8_offset + b * 32, sizeof(float));
        for (size_t r = 0; r < kR; ++r) {
          const V dot{vcvtq_f32_s32(DotBlock(wlo[r], whi[r], xlo, xhi))};
          acc[r][t] = hn::MulAdd(dot, hn::Set(df, dw[r] * dx), acc[r][t]);
        }
      }
    }
    StoreTileSums<kR, kT>(df, acc, job.out(row, token), job.y_stride);
  }
};

#else
// ---------------------------------------------------------------- portable Highway version

template <DType kType>
struct QuantKernel {
  static constexpr size_t kRows = 2, kTokens = 2;

  template <size_t kR, size_t kT>
  static HWY_NOINLINE void Tile(const TileJob& job, size_t row, size_t token) {
    constexpr size_t kBB = kBlockBytes<kType>;
    const hn::CappedTag<int16_t, 16> d16;
    const hn::Rebind<int8_t, decltype(d16)> d8;
    const hn::Rebind<uint8_t, decltype(d16)> du8;
    const hn::Rebind<uint16_t, decltype(d16)> du16;
    const hn::RepartitionToWide<decltype(d16)> d32;
    const hn::Rebind<float, decltype(d32)> df;
    using V16 = hn::Vec<decltype(d16)>;
    using VF = hn::Vec<decltype(df)>;
    constexpr size_t kChunks = 32 / hn::MaxLanes(d16);
    const size_t N16 = hn::Lanes(d16);
    const size_t nb = job.cols / 32;
    const uint8_t* wr[kR];
    for (size_t r = 0; r < kR; ++r) wr[r] = job.row(row + r);
    const uint8_t* xt[kT];
    for (size_t t = 0; t < kT; ++t) xt[t] = job.token(token + t);

    VF acc[kR][kT];
    for (size_t r = 0; r < kR; ++r) {
      for (size_t t = 0; t < kT; ++t) acc[r][t] = hn::Zero(df);
    }
    for (size_t b = 0; b < nb; ++b) {
      V16 wq[kR][kChunks];
      const uint8_t* blks[kR];
      float dw[kR];
      for (size_t r = 0; r < kR; ++r) blks[r] = wr[r] + b * kBB;
      LoadScales(blks, dw);
      for (size_t r = 0; r < kR; ++r) {
        const uint8_t* blk = blks[r];
        for (size_t c = 0; c < kChunks; ++c) {
          if constexpr (kType == DType::kQ8_0) {
            wq[r][c] = hn::PromoteTo(d16, hn::LoadU(d8, reinterpret_cast<const int8_t*>(blk + 2) + c * N16));
          } else {  // elements 0..15 are the low nibbles of bytes 0..15, 16..31 the high nibbles
            const size_t e = c * N16;
            const V16 v = hn::BitCast(d16, hn::PromoteTo(du16, hn::LoadU(du8, blk + 2 + e % 16)));
            const V16 nib = e < 16 ? hn::And(v, hn::Set(d16, 15)) : hn::ShiftRight<4>(v);
            wq[r][c] = hn::Sub(nib, hn::Set(d16, 8));
          }
        }
      }
      for (size_t t = 0; t < kT; ++t) {
        const uint8_t* x = xt[t];
        V16 xq[kChunks];
        for (size_t c = 0; c < kChunks; ++c) {
          xq[c] = hn::PromoteTo(d16, hn::LoadU(d8, reinterpret_cast<const int8_t*>(x + b * 32) + c * N16));
        }
        float dx;
        std::memcpy(&dx, x + job.d8_offset + b * 32, sizeof(float));
        for (size_t r = 0; r < kR; ++r) {
          auto s0 = hn::Zero(d32), s1 = hn::Zero(d32);
          for (size_t c = 0; c < kChunks; ++c) s0 = hn::ReorderWidenMulAccumulate(d32, wq[r][c], xq[c], s0, s1);
          acc[r][t] = hn::MulAdd(hn::ConvertTo(df, hn::Add(s0, s1)), hn::Set(df, dw[r] * dx), acc[r][t]);
        }
      }
    }
    StoreTileSums<kR, kT>(df, acc, job.out(row, token), job.y_stride);
  }
};

#endif

template <DType kType>
void MatMulQuantT(const TensorView& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                  size_t row_end) {
  using K = QuantKernel<kType>;
  TileMatMul<K, K::kRows, K::kTokens>(QuantJob(w, a, y, y_stride), row_begin, row_end, a.num_tokens);
}

}  // namespace

void MatMulQuantImpl(const TensorView& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                     size_t row_end) {
  switch (w.dtype) {
    case DType::kQ8_0: return MatMulQuantT<DType::kQ8_0>(w, a, y, y_stride, row_begin, row_end);
    case DType::kQ4_0: return MatMulQuantT<DType::kQ4_0>(w, a, y, y_stride, row_begin, row_end);
    default: HWY_ASSERT(false);
  }
}

// Quantizes num_tokens rows of x into the QuantLayout records at `out`.
void PackQuantImpl(DType weight_type, size_t cols, const float* x, size_t x_stride, size_t num_tokens,
                   uint8_t* out) {
  const kernels_internal::QuantLayout layout = kernels_internal::QuantLayoutFor(cols);
  const int32_t c = kernels_internal::QuantCorrectionFactor(weight_type);
  const hn::CappedTag<float, 16> df;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const size_t N = hn::Lanes(df);
  for (size_t t = 0; t < num_tokens; ++t) {
    uint8_t* rec = out + t * layout.stride;
    int8_t* q = reinterpret_cast<int8_t*>(rec);
    for (size_t b = 0; b < layout.blocks; ++b) {
      const float* xb = x + t * x_stride + b * 32;
      auto vmax = hn::Zero(df);
      for (size_t i = 0; i < 32; i += N) vmax = hn::Max(vmax, hn::Abs(hn::LoadU(df, xb + i)));
      const float amax = hn::GetLane(hn::MaxOfLanes(df, vmax));
      const float d = amax / 127.0f;
      const auto scale = hn::Set(df, amax > 0.0f ? 127.0f / amax : 0.0f);
      for (size_t i = 0; i < 32; i += N) {
        const auto qi = hn::NearestInt(hn::Mul(hn::LoadU(df, xb + i), scale));
        hn::StoreU(hn::DemoteTo(d8, qi), d8, q + b * 32 + i);
      }
      for (size_t j = 0; j < 8; ++j) {
        const int8_t* g = q + b * 32 + 4 * j;
        const int32_t corr = -c * (g[0] + g[1] + g[2] + g[3]);
        std::memcpy(rec + layout.d8_offset + (b * 8 + j) * 4, &d, 4);
        std::memcpy(rec + layout.corr_offset + (b * 8 + j) * 4, &corr, 4);
      }
    }
    std::memset(rec + layout.blocks * 96, 0, layout.stride - layout.blocks * 96);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace fgemma
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace fgemma {
HWY_EXPORT(MatMulQuantImpl);
HWY_EXPORT(PackQuantImpl);

namespace kernels_internal {
void MatMulQuant(const TensorView& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                 size_t row_end) {
  HWY_DYNAMIC_DISPATCH(MatMulQuantImpl)(w, a, y, y_stride, row_begin, row_end);
}
void PackQuant(DType weight_type, size_t cols, const float* x, size_t x_stride, size_t num_tokens, uint8_t* out) {
  HWY_DYNAMIC_DISPATCH(PackQuantImpl)(weight_type, cols, x, x_stride, num_tokens, out);
}
}  // namespace kernels_internal
}  // namespace fgemma
#endif  // HWY_ONCE
