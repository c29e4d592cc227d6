// MatMul for q8_0 / q4_0 weights on activations quantized per 32-block to int8 (see QuantLayout in
// matmul_internal.h), plus the activation packing; on AVX2 also every type X86PanelType names.
//
// Math (all targets): y = sum_b dw_b * dx_b * sum_{k in b} wq_k * xq_k, the inner sums exact in
// int32, then scaled and accumulated in float32. Against the float reference (dequantized weights
// times unquantized float activations) the only extra error is the activation rounding:
// |x_k - dx_b xq_k| <= dx_b / 2 = amax_b / 254, so |y - ref| <= sum_b (amax_b / 254) sum_{k in b} |w_k|
// plus float32 summation error. Measured (tests: QuantizedAccuracyVsFloat, 256x640, 8 tokens):
// relative RMS error vs the float reference 0.54% (q8_0) / 0.52% (q4_0) of the output RMS on
// Gaussian activations, max 2.1%; with 30x outliers in 1/64 of the channels (like real hidden
// states) 1.2% RMS for both, max 5-6%. Identical on every target (the integer part is exact).
//
// Kernels:
//   AVX3_DL (AVX-512 VNNI): 64 bytes = two blocks per vector; vpdpbusd on (w + 128) as u8 x xq as
//                           s8, each int32 lane starting from the packed correction -128 * sum(xq);
//                           4 rows x 4 tokens register tile.
//   AVX2, AVX3:             8-row panels at load (kernels/quant_panels_avx2-inl.h: also q5_0 and the
//                           level-panel types); without them one block per 256-bit vector,
//                           maddubs(|w|, sign(xq, w)) + madd.
//   NEON:                   vdotq_s32 when built with the dotprod extension, else vmull_s8/vpadalq.
//   Others (SSE4, scalar):  portable Highway code, int16 widening multiply-accumulate.
#include "kernels/simd_config.h"

#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/matmul_quant.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/matmul_internal.h"
#include "kernels/simd_common-inl.h"
#include "kernels/quant_panels_avx2-inl.h"  // Avx2PanelKernel (AVX2, AVX3)

HWY_BEFORE_NAMESPACE();
namespace fgemma {
namespace HWY_NAMESPACE {
namespace {

// Weight blocks as util/weight_types.h lays them out: the f16 scale, then the quantized values.
template <DType kType>
constexpr size_t kBlockBytes = sizeof(QuantBlock<kType>);
constexpr size_t kValuesAt = kQuantBlockScaleBytes;  // offset of q[] in a block
constexpr size_t kBlockValues = kQuantBlockValues;

HWY_INLINE HWY_MAYBE_UNUSED uint16_t LoadU16(const uint8_t* p) {  // AVX3_DL's pairs
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
  job.bsum_offset = layout.bsum_offset;
  return job;
}

#if HWY_TARGET == HWY_AVX3_DL
// ---------------------------------------------------------------- AVX-512 VNNI: two blocks/vector
// Highway 1.0's AVX3_DL target string lacks avx512vnni: this section runs under Highway's string
// plus it. Replaced, not stacked: clang applies only the outer of two pushed target attributes.
HWY_POP_ATTRIBUTES
HWY_PUSH_ATTRIBUTES(HWY_TARGET_STR ",avx512vnni")

// Weights of blocks b and b+1 (at blk and blk + kBlockBytes) as unsigned bytes w + 128.
template <DType kType>
HWY_INLINE __m512i LoadPairU8(const uint8_t* blk) {
  if constexpr (kType == DType::kQ8_0) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kValuesAt));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kBlockBytes<DType::kQ8_0> + kValuesAt));
    return _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), _mm512_set1_epi8(-128));
  } else {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kValuesAt));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kBlockBytes<DType::kQ4_0> + kValuesAt));
    const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_broadcastsi128_si256(lo)),
                                            _mm256_broadcastsi128_si256(hi), 1);
    // 128-bit lanes: [lo, lo>>4, hi, hi>>4] & 15 = elements 0..15, 16..31 of each block; the
    // value is nibble - 8, so w + 128 = nibble + 120.
    const __m512i shifts = _mm512_set_epi64(0x0004000400040004LL, 0x0004000400040004LL, 0, 0,
                                            0x0004000400040004LL, 0x0004000400040004LL, 0, 0);
    const __m512i nib = _mm512_and_si512(_mm512_srlv_epi16(both, shifts), _mm512_set1_epi8(15));
    return _mm512_add_epi8(nib, _mm512_set1_epi8(120));
  }
}

// The last block alone (upper 256 bits zero).
template <DType kType>
HWY_INLINE __m512i LoadLastU8(const uint8_t* blk) {
  if constexpr (kType == DType::kQ8_0) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kValuesAt));
    return _mm512_zextsi256_si512(_mm256_xor_si256(v, _mm256_set1_epi8(-128)));
  } else {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kValuesAt));
    const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(v), _mm_srli_epi16(v, 4), 1);
    const __m256i nib = _mm256_and_si256(both, _mm256_set1_epi8(15));
    return _mm512_zextsi256_si512(_mm256_add_epi8(nib, _mm256_set1_epi8(120)));
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

  // Accumulates blocks b, b+1 (kLast: block b alone, masked token loads) into acc. (GCC keeps a
  // stack copy of acc that it updates every iteration; measured harmless: the store ports idle.)
  template <bool kLast, size_t kR, size_t kT>
  static HWY_INLINE void Step(const TileJob& job, size_t b, const TilePointers<kR, kT>& tile,
                              hn::Vec512<float> (&acc)[kR][kT]) {
    constexpr size_t kBB = kBlockBytes<kType>;
    constexpr __mmask16 kMask = kLast ? 0x00FF : 0xFFFF;
    __m512i wu[kR];
    __m512 dw[kR];
    for (size_t r = 0; r < kR; ++r) {
      const uint8_t* blk = tile.w[r] + b * kBB;
      // The next tile's rows: short row streams defeat the hardware prefetcher in decode.
      hwy::Prefetch(blk + kR * job.w_row_bytes);
      hwy::Prefetch(blk + kR * job.w_row_bytes + 64);
      wu[r] = kLast ? LoadLastU8<kType>(blk) : LoadPairU8<kType>(blk);
      dw[r] = PairScales(LoadU16(blk), kLast ? 0 : LoadU16(blk + kBB));
    }
    for (size_t t = 0; t < kT; ++t) {
      const uint8_t* x = tile.x[t];
      const __m512i xq = _mm512_maskz_loadu_epi32(kMask, x + b * 32);
      const __m512i corr = _mm512_maskz_loadu_epi32(kMask, x + job.corr_offset + b * 32);
      const __m512 dx = _mm512_maskz_loadu_ps(kMask, x + job.d8_offset + b * 32);
      for (size_t r = 0; r < kR; ++r) {
        const __m512i dot = _mm512_dpbusd_epi32(corr, wu[r], xq);
        acc[r][t].raw = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw[r], dx), acc[r][t].raw);
      }
    }
  }

  template <size_t kR, size_t kT>
  static HWY_NOINLINE void Tile(const TileJob& job, size_t row, size_t token) {
    const hn::Full512<float> df;
    const TilePointers<kR, kT> tile(job, row, token);
    hn::Vec512<float> acc[kR][kT];
    ZeroTile(df, acc);
    const size_t nb = job.cols / kBlockValues;
    size_t b = 0;
    for (; b + 2 <= nb; b += 2) Step<false>(job, b, tile, acc);
    if (b < nb) Step<true>(job, b, tile, acc);  // odd block count
    StoreTileSums<kR, kT>(df, acc, job.out(row, token), job.y_stride);
  }
};

// ---------------------------------------------------------------- row-interleaved weights
// Lanes are 16 rows of one panel (layout in matmul_internal.h); tokens run in tiles of up to 8.
// Per block and token: 8 vpdpbusd (the token's 4 activations broadcast from its packed record)
// from the block's correction, then one conversion and one FMA with dw * dx: 8 integer and 3 float
// instructions per 512 multiply-adds, against 16 and 48 in QuantKernel's 4x4 tile.
template <DType kType>
struct InterleavedKernel {
  static constexpr size_t kGroupBytes = kernels_internal::InterleavedBlockBytes(kType);
  static constexpr size_t kBsumIndex = kType == DType::kQ8_0 ? 0 : 1;  // -128 s_b or -8 s_b

  // The 8 group vectors of one block (u8: q8_0 w + 128, q4_0 nibbles w + 8).
  static HWY_INLINE void LoadGroups(const uint8_t* q, __m512i (&g)[8]) {
    if constexpr (kType == DType::kQ8_0) {
      for (size_t i = 0; i < 8; ++i) g[i] = _mm512_loadu_si512(q + 64 * i);
    } else {
      const __m512i low = _mm512_set1_epi8(15);
      for (size_t i = 0; i < 4; ++i) {
        const __m512i v = _mm512_loadu_si512(q + 64 * i);
        g[i] = _mm512_and_si512(v, low);
        g[i + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
      }
    }
  }

  // Rows [row, row + valid) of the panel at `panel` x tokens [token, token + kT), kT >= 4: group-major
  // order. Each loaded group vector feeds the kT tokens in turn, so consecutive vpdpbusd belong to
  // different chains (kT * kChains = 8 independent int32 chains) and the multiply units never wait
  // on a dot's latency; the token-major order of Tile below runs one token's 8 dependent vpdpbusd
  // back to back and leaves out-of-order execution to overlap tokens (prefill's ~0.53 ms per row on
  // two cores suggests about a third of the VNNI throughput; not yet measured). The chains sum in int32 (exact), and the
  // float epilogue is Tile's, so every output has the same bits in either order.
  template <size_t kT>
  static HWY_NOINLINE void WideTile(const TileJob& job, const uint8_t* panel, size_t row, size_t valid,
                                    size_t token) {
    static_assert(kT >= 4 && kT <= 8);
    constexpr size_t kChains = 8 / kT;
    const size_t nb = job.cols / kBlockValues;
    const uint8_t* scales = panel;
    const uint8_t* q = panel + kernels_internal::InterleavedScaleBytes(job.cols);
    const uint8_t* x[kT];
    for (size_t t = 0; t < kT; ++t) x[t] = job.token(token + t);
    __m512 acc[kT];
    for (size_t t = 0; t < kT; ++t) acc[t] = _mm512_setzero_ps();
#pragma GCC unroll 1
    for (size_t b = 0; b < nb; ++b) {
      const uint8_t* qb = q + b * kGroupBytes;
      const size_t q_at = b * 32, start_at = job.bsum_offset + (b * 2 + kBsumIndex) * 4, dx_at = job.d8_offset + b * 32;
      __m512i dots[kT][kChains];
#pragma GCC unroll 8
      for (size_t t = 0; t < kT; ++t) {
        int32_t start;
        std::memcpy(&start, x[t] + start_at, 4);
        dots[t][0] = _mm512_set1_epi32(start);
        for (size_t c = 1; c < kChains; ++c) dots[t][c] = _mm512_setzero_si512();
      }
      // Group i of the block against every token's activations 4i..4i+3 (q4_0: the low nibbles of
      // bytes 64 (i % 4) .. for i < 4, the high ones after).
#pragma GCC unroll 8
      for (size_t i = 0; i < 8; ++i) {
        __m512i g;
        if constexpr (kType == DType::kQ8_0) {
          g = _mm512_loadu_si512(qb + 64 * i);
        } else {
          const __m512i v = _mm512_loadu_si512(qb + 64 * (i % 4));
          g = _mm512_and_si512(i < 4 ? v : _mm512_srli_epi16(v, 4), _mm512_set1_epi8(15));
        }
#pragma GCC unroll 8
        for (size_t t = 0; t < kT; ++t) {
          int32_t four;
          std::memcpy(&four, x[t] + q_at + 4 * i, 4);
          dots[t][i % kChains] = _mm512_dpbusd_epi32(dots[t][i % kChains], g, _mm512_set1_epi32(four));
        }
      }
      const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + b * 32)));
#pragma GCC unroll 8
      for (size_t t = 0; t < kT; ++t) {
        __m512i dot = dots[t][0];
        for (size_t c = 1; c < kChains; ++c) dot = _mm512_add_epi32(dot, dots[t][c]);
        float dx;
        std::memcpy(&dx, x[t] + dx_at, 4);
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, _mm512_set1_ps(dx)), acc[t]);
      }
    }
    const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1);
    for (size_t t = 0; t < kT; ++t) _mm512_mask_storeu_ps(job.out(row, token + t), mask, acc[t]);
  }

  // Two whole panels (32 rows) x kT tokens, group-major as WideTile: each token's broadcast
  // activations feed both panels, so a block takes 16 weight loads and 8 kT broadcasts for 16 kT
  // vpdpbusd where WideTile takes one broadcast per vpdpbusd. Zen 5 issues two vpdpbusd a cycle;
  // WideTile's instruction stream (a broadcast, a dot, and the epilogue per 8) was the limit there.
  // Same int32 sums and the same float epilogue, so the same bits as WideTile and Tile.
  template <size_t kP, size_t kT>
  static HWY_NOINLINE void PairTile(const TileJob& job, const uint8_t* panel, size_t panel_bytes, size_t row,
                                    size_t token) {
    const size_t nb = job.cols / kBlockValues;
    const uint8_t* scales[kP];
    const uint8_t* q[kP];
    for (size_t p = 0; p < kP; ++p) {
      scales[p] = panel + p * panel_bytes;
      q[p] = scales[p] + kernels_internal::InterleavedScaleBytes(job.cols);
    }
    const uint8_t* x[kT];
    for (size_t t = 0; t < kT; ++t) x[t] = job.token(token + t);
    __m512 acc[kP][kT];
    for (size_t p = 0; p < kP; ++p) {
      for (size_t t = 0; t < kT; ++t) acc[p][t] = _mm512_setzero_ps();
    }
#pragma GCC unroll 1
    for (size_t b = 0; b < nb; ++b) {
      const size_t q_at = b * 32, start_at = job.bsum_offset + (b * 2 + kBsumIndex) * 4, dx_at = job.d8_offset + b * 32;
      __m512i dots[kP][kT];
#pragma GCC unroll 8
      for (size_t t = 0; t < kT; ++t) {
        int32_t start;
        std::memcpy(&start, x[t] + start_at, 4);
        const __m512i sv = _mm512_set1_epi32(start);
        for (size_t p = 0; p < kP; ++p) dots[p][t] = sv;
      }
#pragma GCC unroll 8
      for (size_t i = 0; i < 8; ++i) {
        __m512i g[kP];
        for (size_t p = 0; p < kP; ++p) {
          const uint8_t* qb = q[p] + b * kGroupBytes;
          if constexpr (kType == DType::kQ8_0) {
            g[p] = _mm512_loadu_si512(qb + 64 * i);
          } else {
            const __m512i v = _mm512_loadu_si512(qb + 64 * (i % 4));
            g[p] = _mm512_and_si512(i < 4 ? v : _mm512_srli_epi16(v, 4), _mm512_set1_epi8(15));
          }
        }
#pragma GCC unroll 8
        for (size_t t = 0; t < kT; ++t) {
          int32_t four;
          std::memcpy(&four, x[t] + q_at + 4 * i, 4);
          const __m512i xb = _mm512_set1_epi32(four);
          for (size_t p = 0; p < kP; ++p) dots[p][t] = _mm512_dpbusd_epi32(dots[p][t], g[p], xb);
        }
      }
      __m512 dw[kP];
      for (size_t p = 0; p < kP; ++p) {
        dw[p] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales[p] + b * 32)));
      }
#pragma GCC unroll 8
      for (size_t t = 0; t < kT; ++t) {
        float dx;
        std::memcpy(&dx, x[t] + dx_at, 4);
        const __m512 vdx = _mm512_set1_ps(dx);
        for (size_t p = 0; p < kP; ++p) {
          acc[p][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dots[p][t]), _mm512_mul_ps(dw[p], vdx), acc[p][t]);
        }
      }
    }
    for (size_t p = 0; p < kP; ++p) {
      for (size_t t = 0; t < kT; ++t) _mm512_storeu_ps(job.out(row + 16 * p, token + t), acc[p][t]);
    }
  }

  // Token-major order (one token's whole block, then the next), for one or two tokens: decode
  // streams the weights, so the prefetch below matters more than the multiply units.
  template <size_t kT>
  static HWY_NOINLINE void Tile(const TileJob& job, const uint8_t* panel, size_t row, size_t valid,
                                size_t token) {
    static_assert(kT <= 2);
    const size_t nb = job.cols / kBlockValues;
    const uint8_t* scales = panel;
    const uint8_t* q = panel + kernels_internal::InterleavedScaleBytes(job.cols);
    const uint8_t* x[kT];
    for (size_t t = 0; t < kT; ++t) x[t] = job.token(token + t);
    __m512 acc[kT];
    for (size_t t = 0; t < kT; ++t) acc[t] = _mm512_setzero_ps();
    // Unrolled over tokens so acc stays in registers (GCC keeps a rolled loop's acc on the stack);
    // one block at a time so the 8 group vectors fit beside them.
#pragma GCC unroll 1
    for (size_t b = 0; b < nb; ++b) {
      __m512i g[8];
      // Decode streams the weights from memory once, faster than the hardware prefetcher runs
      // ahead of one core: fetch ~6 KB ahead (measured on the 262144-row head, one thread:
      // q4_0 4.8 -> 2.7 ms, q8_0 6.0 -> 5.1 ms). Prefetches past the end are harmless.
      constexpr size_t kAhead = 6144 / kGroupBytes;
      for (size_t line = 0; line < kGroupBytes; line += 64) hwy::Prefetch(q + (b + kAhead) * kGroupBytes + line);
      LoadGroups(q + b * kGroupBytes, g);
      const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + b * 32)));
      const size_t q_at = b * 32, start_at = job.bsum_offset + (b * 2 + kBsumIndex) * 4, dx_at = job.d8_offset + b * 32;
#pragma GCC unroll 8
      for (size_t t = 0; t < kT; ++t) {
        const uint8_t* xt = x[t];
        int32_t start;
        std::memcpy(&start, xt + start_at, 4);
        // Few tokens leave nothing to overlap a block's 8 dependent vpdpbusd with: split them into
        // kChains chains summed at the end (exact in int32, so the same bits either way).
        constexpr size_t kChains = 4;
        __m512i dots[kChains];
        dots[0] = _mm512_set1_epi32(start);
        for (size_t c = 1; c < kChains; ++c) dots[c] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (size_t i = 0; i < 8; ++i) {
          int32_t four;
          std::memcpy(&four, xt + q_at + 4 * i, 4);
          dots[i % kChains] = _mm512_dpbusd_epi32(dots[i % kChains], g[i], _mm512_set1_epi32(four));
        }
        __m512i dot = dots[0];
        for (size_t c = 1; c < kChains; ++c) dot = _mm512_add_epi32(dot, dots[c]);
        float dx;
        std::memcpy(&dx, xt + dx_at, 4);
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, _mm512_set1_ps(dx)), acc[t]);
      }
    }
    const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1);
    for (size_t t = 0; t < kT; ++t) _mm512_mask_storeu_ps(job.out(row, token + t), mask, acc[t]);
  }

  template <size_t kT>
  static HWY_INLINE void Tokens(const TileJob& job, const uint8_t* panel, size_t row, size_t valid, size_t t,
                                size_t t_end) {
    for (; t + kT <= t_end; t += kT) {
      if constexpr (kT >= 4) {
        WideTile<kT>(job, panel, row, valid, t);
      } else {
        Tile<kT>(job, panel, row, valid, t);
      }
    }
    if constexpr (kT > 1) Tokens<kT / 2>(job, panel, row, valid, t, t_end);
  }

  // row_begin is a multiple of 16. Tokens go in blocks whose records stay in L2 while the slice's
  // panels pass over them.
  static void Run(const TileJob& job, const uint8_t* interleaved, size_t row_begin, size_t row_end,
                  size_t num_tokens) {
    constexpr size_t kTokenBlockBytes = 256 * 1024;
    constexpr size_t kPairTokens = 4, kPairPanels = 2;
    const size_t panel_bytes = kernels_internal::InterleavedPanelBytes(kType, job.cols);
    const size_t block = HWY_MAX(size_t{8}, kTokenBlockBytes / HWY_MAX(job.x_stride, size_t{1}) / 8 * 8);
    for (size_t t0 = 0; t0 < num_tokens; t0 += block) {
      const size_t t1 = HWY_MIN(num_tokens, t0 + block);
      size_t r = row_begin;
      if (t1 - t0 >= kPairTokens) {
        for (; r + 16 * kPairPanels <= row_end; r += 16 * kPairPanels) {
          const uint8_t* panel = interleaved + r / 16 * panel_bytes;
          size_t t = t0;
          for (; t + kPairTokens <= t1; t += kPairTokens) PairTile<kPairPanels, kPairTokens>(job, panel, panel_bytes, r, t);
          for (size_t p = 0; p < kPairPanels; ++p) Tokens<2>(job, panel + p * panel_bytes, r + 16 * p, 16, t, t1);
        }
      }
      for (; r < row_end; r += 16) {
        const uint8_t* panel = interleaved + r / 16 * panel_bytes;
        hwy::Prefetch(panel + panel_bytes);
        Tokens<8>(job, panel, r, HWY_MIN(size_t{16}, row_end - r), t0, t1);
      }
    }
  }
};

HWY_POP_ATTRIBUTES
HWY_PUSH_ATTRIBUTES(HWY_TARGET_STR)

#else
// ---------------------------------------------------------------- one block per step
// BlockKernel runs the tile; BlockOps<target> supplies the block dot product:
//   W LoadW<kType>(block), X LoadX(packed q), Vec<DF> Dot(df, W, X) (lanes sum to the int dot).

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
// AVX2: one block per 256-bit vector, maddubs(|w|, sign(x, w)) + madd.
struct BlockOps {
  static constexpr size_t kRows = 2, kTokens = 4;
  using DF = hn::Full256<float>;
  struct W {
    __m256i s, abs;
  };
  using X = __m256i;

  template <DType kType>
  static HWY_INLINE W LoadW(const uint8_t* blk) {
    __m256i s;
    if constexpr (kType == DType::kQ8_0) {
      s = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kValuesAt));
    } else {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kValuesAt));
      const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(v), _mm_srli_epi16(v, 4), 1);
      s = _mm256_sub_epi8(_mm256_and_si256(both, _mm256_set1_epi8(15)), _mm256_set1_epi8(8));
    }
    return W{s, _mm256_sign_epi8(s, s)};
  }
  static HWY_INLINE X LoadX(const uint8_t* q) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q)); }
  static HWY_INLINE hn::Vec256<float> Dot(DF, const W& w, X x) {
    // |w| * (sign(w) x) never saturates the int16 pair sums: 2 * 128 * 127 < 32768.
    const __m256i p16 = _mm256_maddubs_epi16(w.abs, _mm256_sign_epi8(x, w.s));
    return hn::Vec256<float>{_mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)))};
  }
};

#elif HWY_TARGET == HWY_NEON
// NEON: a block is two q registers; vdotq_s32 with the dotprod extension, else vmull/vpadal.
struct BlockOps {
#if HWY_ARCH_ARM_A64
  static constexpr size_t kRows = 4, kTokens = 2;
#else
  static constexpr size_t kRows = 2, kTokens = 2;
#endif
  using DF = hn::Full128<float>;
  struct W {
    int8x16_t lo, hi;
  };
  using X = W;

  template <DType kType>
  static HWY_INLINE W LoadW(const uint8_t* blk) {
    if constexpr (kType == DType::kQ8_0) {
      return LoadX(blk + kValuesAt);
    } else {
      const uint8x16_t v = vld1q_u8(blk + kValuesAt);
      const int8x16_t eight = vdupq_n_s8(8);
      return W{vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(15))), eight),
               vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), eight)};
    }
  }
  static HWY_INLINE X LoadX(const uint8_t* q) {
    const int8_t* p = reinterpret_cast<const int8_t*>(q);
    return X{vld1q_s8(p), vld1q_s8(p + 16)};
  }
  static HWY_INLINE hn::Vec128<float> Dot(DF, const W& w, const X& x) {
#if defined(__ARM_FEATURE_DOTPROD)
    const int32x4_t sum = vdotq_s32(vdotq_s32(vdupq_n_s32(0), w.lo, x.lo), w.hi, x.hi);
#else
    // int16 pair sums cannot overflow: |w| <= 128, |x| <= 127.
    int16x8_t p0 = vmull_s8(vget_low_s8(w.lo), vget_low_s8(x.lo));
    p0 = vmlal_s8(p0, vget_high_s8(w.lo), vget_high_s8(x.lo));
    int16x8_t p1 = vmull_s8(vget_low_s8(w.hi), vget_low_s8(x.hi));
    p1 = vmlal_s8(p1, vget_high_s8(w.hi), vget_high_s8(x.hi));
    const int32x4_t sum = vpadalq_s16(vpaddlq_s16(p0), p1);
#endif
    return hn::Vec128<float>{vcvtq_f32_s32(sum)};
  }
};

#else
// Portable Highway version (SSE4, scalar, ...): int16 lanes, widening multiply-accumulate.
struct BlockOps {
  static constexpr size_t kRows = 2, kTokens = 2;
  using D16 = hn::CappedTag<int16_t, 16>;
  using D32 = hn::RepartitionToWide<D16>;
  using DF = hn::Rebind<float, D32>;
  using V16 = hn::Vec<D16>;
  static constexpr size_t kChunks = 32 / hn::MaxLanes(D16());
  struct W {
    V16 c[kChunks];
  };
  using X = W;

  template <DType kType>
  static HWY_INLINE W LoadW(const uint8_t* blk) {
    if constexpr (kType == DType::kQ8_0) {
      return LoadX(blk + kValuesAt);
    } else {  // elements 0..15 are the low nibbles of bytes 0..15, 16..31 the high nibbles
      const D16 d16;
      const hn::Rebind<uint8_t, D16> du8;
      const hn::Rebind<uint16_t, D16> du16;
      W w;
      for (size_t c = 0; c < kChunks; ++c) {
        const size_t e = c * hn::Lanes(d16);
        const V16 v = hn::BitCast(d16, hn::PromoteTo(du16, hn::LoadU(du8, blk + kValuesAt + e % 16)));
        const V16 nib = e < 16 ? hn::And(v, hn::Set(d16, 15)) : hn::ShiftRight<4>(v);
        w.c[c] = hn::Sub(nib, hn::Set(d16, 8));
      }
      return w;
    }
  }
  static HWY_INLINE X LoadX(const uint8_t* q) {
    const D16 d16;
    const hn::Rebind<int8_t, D16> d8;
    X x;
    for (size_t c = 0; c < kChunks; ++c) {
      x.c[c] = hn::PromoteTo(d16, hn::LoadU(d8, reinterpret_cast<const int8_t*>(q) + c * hn::Lanes(d16)));
    }
    return x;
  }
  static HWY_INLINE hn::Vec<DF> Dot(DF df, const W& w, const X& x) {
    const D32 d32;
    auto s0 = hn::Zero(d32), s1 = hn::Zero(d32);
    for (size_t c = 0; c < kChunks; ++c) s0 = hn::ReorderWidenMulAccumulate(d32, w.c[c], x.c[c], s0, s1);
    return hn::ConvertTo(df, hn::Add(s0, s1));
  }
};
#endif

template <DType kType>
struct QuantKernel {
  static constexpr size_t kRows = BlockOps::kRows, kTokens = BlockOps::kTokens;

  template <size_t kR, size_t kT>
  static HWY_NOINLINE void Tile(const TileJob& job, size_t row, size_t token) {
    constexpr size_t kBB = kBlockBytes<kType>;
    const typename BlockOps::DF df;
    const TilePointers<kR, kT> tile(job, row, token);
    hn::Vec<decltype(df)> acc[kR][kT];
    ZeroTile(df, acc);
    const size_t nb = job.cols / kBlockValues;
    // The next tile's rows; a one-row decode tile reaches 8 rows ahead (one thread, the 270m's
    // q8_0 head: 12-16 GB/s against 11-12 one row ahead and 7 with no prefetch).
    const size_t ahead = (kR == 1 && kT == 1 ? 8 : kR) * job.w_row_bytes;
    for (size_t b = 0; b < nb; ++b) {
      typename BlockOps::W w[kR];
      const uint8_t* blk[kR];
      float dw[kR];
      for (size_t r = 0; r < kR; ++r) {
        blk[r] = tile.w[r] + b * kBB;
        hwy::Prefetch(blk[r] + ahead);
        w[r] = BlockOps::template LoadW<kType>(blk[r]);
      }
      LoadScales(blk, dw);
      for (size_t t = 0; t < kT; ++t) {
        const typename BlockOps::X x = BlockOps::LoadX(tile.x[t] + b * 32);
        float dx;
        std::memcpy(&dx, tile.x[t] + job.d8_offset + b * 32, sizeof(float));
        for (size_t r = 0; r < kR; ++r) {
          acc[r][t] = hn::MulAdd(BlockOps::Dot(df, w[r], x), hn::Set(df, dw[r] * dx), acc[r][t]);
        }
      }
    }
    StoreTileSums<kR, kT>(df, acc, job.out(row, token), job.y_stride);
  }
};
#endif

template <DType kType>
void MatMulQuantT(const KernelMatrix& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                  size_t row_end) {
#if HWY_TARGET == HWY_AVX3_DL
  if (w.repacked != nullptr && row_begin % kernels_internal::kInterleaveRows == 0) {
    InterleavedKernel<kType>::Run(QuantJob(w, a, y, y_stride), static_cast<const uint8_t*>(w.repacked),
                                  row_begin, row_end, a.num_tokens);
    return;
  }
#endif
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
  if (w.repacked != nullptr && row_begin % kernels_internal::kAvx2PanelRows == 0) {
    Avx2PanelKernel<kType>::Run(QuantJob(w, a, y, y_stride), static_cast<const uint8_t*>(w.repacked), row_begin,
                                row_end, a.num_tokens);
    return;
  }
  if constexpr (!DTypeIsQ8OrQ4_0(kType)) {
    // Only the panel kernel computes q5_0 and the level-panel types here: stored rows become panels in
    // per-thread scratch, 64 rows at a time (products without the load-time copy: FGEMMA_INTERLEAVE=0,
    // slices off a panel), so the bits never depend on the layout.
    constexpr size_t kChunkRows = 64;
    const kernels_internal::PanelFormat f = kernels_internal::Avx2PanelFormat();
    thread_local std::vector<uint8_t> scratch;
    scratch.resize(f.panel_bytes(kType, w.cols) * (kChunkRows / kernels_internal::kAvx2PanelRows));
    for (size_t r0 = row_begin; r0 < row_end; r0 += kChunkRows) {
      const size_t r1 = HWY_MIN(row_end, r0 + kChunkRows);
      KernelMatrix chunk = RowSlice(w, r0, r1);
      kernels_internal::InterleaveWeights(chunk, scratch.data());
      Avx2PanelKernel<kType>::Run(QuantJob(chunk, a, y + r0, y_stride), scratch.data(), 0, r1 - r0, a.num_tokens);
    }
    return;
  }
  // Decode: one row at a time streams a single run of weights past the hardware prefetcher; two rows
  // interleaved (the prefill tile's) read the 270m's q8_0 head at 9-10 GB/s on one thread, one row
  // at 12-16 (the same bits: each output's operations do not depend on the tile).
  if (a.num_tokens == 1) {
    TileMatMul<QuantKernel<kType>, 1, 1>(QuantJob(w, a, y, y_stride), row_begin, row_end, a.num_tokens);
    return;
  }
#endif
  // The stored blocks (q8_0 / q4_0 only: the other types reach here only on AVX2, above).
  if constexpr (DTypeIsQ8OrQ4_0(kType)) {
    using K = QuantKernel<kType>;
    TileMatMul<K, K::kRows, K::kTokens>(QuantJob(w, a, y, y_stride), row_begin, row_end, a.num_tokens);
  }
}

}  // namespace

void MatMulQuantImpl(const KernelMatrix& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                     size_t row_end) {
  switch (w.dtype) {
    case DType::kQ8_0: return MatMulQuantT<DType::kQ8_0>(w, a, y, y_stride, row_begin, row_end);
    case DType::kQ4_0: return MatMulQuantT<DType::kQ4_0>(w, a, y, y_stride, row_begin, row_end);
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
    // X86PanelType: q5_0 and the level panels
    case DType::kQ5_0: return MatMulQuantT<DType::kQ5_0>(w, a, y, y_stride, row_begin, row_end);
    case DType::kQ4_1: return MatMulQuantT<DType::kQ4_1>(w, a, y, y_stride, row_begin, row_end);
    case DType::kQ5_1: return MatMulQuantT<DType::kQ5_1>(w, a, y, y_stride, row_begin, row_end);
    case DType::kQ4_K: return MatMulQuantT<DType::kQ4_K>(w, a, y, y_stride, row_begin, row_end);
    case DType::kQ5_K: return MatMulQuantT<DType::kQ5_K>(w, a, y, y_stride, row_begin, row_end);
    case DType::kQ6_K: return MatMulQuantT<DType::kQ6_K>(w, a, y, y_stride, row_begin, row_end);
#endif
    default: HWY_ASSERT(false);
  }
}

size_t X86PanelRowsImpl() {
#if HWY_TARGET == HWY_AVX3_DL
  return kernels_internal::kInterleaveRows;
#elif HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
  return kernels_internal::kAvx2PanelRows;
#else
  return 0;
#endif
}

// Quantizes num_tokens rows of x into the QuantLayout records at `out`.
void PackQuantImpl(size_t cols, const float* x, size_t x_stride, size_t num_tokens,
                   uint8_t* out) {
  const kernels_internal::QuantLayout layout = kernels_internal::QuantLayoutFor(cols);
  const hn::CappedTag<float, 16> df;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const size_t N = hn::Lanes(df);
  for (size_t t = 0; t < num_tokens; ++t) {
    uint8_t* rec = out + t * layout.stride;
    int8_t* q = reinterpret_cast<int8_t*>(rec);
#if HWY_TARGET == HWY_NEON && HWY_ARCH_ARM_A64
    // aarch64: the loop below on whole blocks, the group sums by pairwise adds instead of scalar
    // code (about 205 -> 75 guest instructions a block under qemu). The same operations in the same
    // order (|x| max, d = amax / 127, x * (127 / amax) rounded to nearest even by fcvtns as
    // NearestInt does, NaN to 0 as IfThenZeroElse does), so the same bytes; the values are within
    // [-127, 127], so the narrowing is exact. Checked per target by PackActivationsQuantizes.
    for (size_t b = 0; b < layout.blocks; ++b) {
      const float* xb = x + t * x_stride + b * 32;
      const float32x4x4_t lo = vld1q_f32_x4(xb), hi = vld1q_f32_x4(xb + 16);
      const float32x4_t v[8] = {lo.val[0], lo.val[1], lo.val[2], lo.val[3], hi.val[0], hi.val[1], hi.val[2], hi.val[3]};
      float32x4_t m[8];
      for (int i = 0; i < 8; ++i) m[i] = vabsq_f32(v[i]);
      for (int i = 0; i < 4; ++i) m[i] = vmaxq_f32(m[i], m[i + 4]);
      m[0] = vmaxq_f32(vmaxq_f32(m[0], m[2]), vmaxq_f32(m[1], m[3]));
      const float amax = vmaxvq_f32(vmaxq_f32(vdupq_n_f32(0.0f), m[0]));
      const float d = amax / 127.0f;
      const float scale = amax > 0.0f ? 127.0f / amax : 0.0f;
      int32x4_t qi[8];
      for (int i = 0; i < 8; ++i) qi[i] = vcvtnq_s32_f32(vmulq_n_f32(v[i], scale));
      int16x8_t h[4];
      for (int i = 0; i < 4; ++i) h[i] = vuzp1q_s16(vreinterpretq_s16_s32(qi[2 * i]), vreinterpretq_s16_s32(qi[2 * i + 1]));
      const int8x16x2_t q8 = {{vuzp1q_s8(vreinterpretq_s8_s16(h[0]), vreinterpretq_s8_s16(h[1])),
                               vuzp1q_s8(vreinterpretq_s8_s16(h[2]), vreinterpretq_s8_s16(h[3]))}};
      vst1q_s8_x2(q + b * 32, q8);
      const int32x4_t g03 = vpaddq_s32(vpaddq_s32(qi[0], qi[1]), vpaddq_s32(qi[2], qi[3]));  // groups 0-3
      const int32x4_t g47 = vpaddq_s32(vpaddq_s32(qi[4], qi[5]), vpaddq_s32(qi[6], qi[7]));
      const int32x4x2_t corr = {{vmulq_n_s32(g03, -128), vmulq_n_s32(g47, -128)}};
      vst1q_s32_x2(reinterpret_cast<int32_t*>(rec + layout.corr_offset + b * 32), corr);
      const float32x4x2_t d8 = {{vdupq_n_f32(d), vdupq_n_f32(d)}};
      vst1q_f32_x2(reinterpret_cast<float*>(rec + layout.d8_offset + b * 32), d8);
      const int32_t block_sum = vaddvq_s32(vaddq_s32(g03, g47));
      const int32_t starts[2] = {-128 * block_sum, -8 * block_sum};
      std::memcpy(rec + layout.bsum_offset + b * 8, starts, 8);
    }
    std::memset(rec + layout.used, 0, layout.stride - layout.used);
    continue;
#endif
    for (size_t b = 0; b < layout.blocks; ++b) {
      const float* xb = x + t * x_stride + b * 32;
      auto vmax = hn::Zero(df);
      for (size_t i = 0; i < 32; i += N) vmax = hn::Max(vmax, hn::Abs(hn::LoadU(df, xb + i)));
      const float amax = hn::GetLane(hn::MaxOfLanes(df, vmax));
      const float d = amax / 127.0f;
      const auto scale = hn::Set(df, amax > 0.0f ? 127.0f / amax : 0.0f);
      for (size_t i = 0; i < 32; i += N) {
        // NaN activations (a corrupt KV state) quantize to 0: converting NaN to int is undefined.
        const auto xs = hn::Mul(hn::LoadU(df, xb + i), scale);
        const auto qi = hn::NearestInt(hn::IfThenZeroElse(hn::IsNaN(xs), xs));
        hn::StoreU(hn::DemoteTo(d8, qi), d8, q + b * 32 + i);
      }
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
      // The 8 group sums at once: maddubs of ones (u8) and the values (s8) adds byte pairs into
      // int16 (at most 2 * 127), madd of ones adds those pairs into int32: lane j = bytes 4j..4j+3.
      // Integer sums in any order, so the same record as the loop below (about a fifth of its
      // instructions: packing was 3-5 % of a drafted or batched pass).
      {
        const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + b * 32));
        const __m256i sums = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), bytes), _mm256_set1_epi16(1));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(rec + layout.corr_offset + b * 32),
                            _mm256_mullo_epi32(sums, _mm256_set1_epi32(-128)));
        _mm256_storeu_ps(reinterpret_cast<float*>(rec + layout.d8_offset + b * 32), _mm256_set1_ps(d));
        __m128i total = _mm_add_epi32(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
        total = _mm_add_epi32(total, _mm_shuffle_epi32(total, 0x4E));
        total = _mm_add_epi32(total, _mm_shuffle_epi32(total, 0xB1));
        const int32_t block_sum = _mm_cvtsi128_si32(total);
        const int32_t starts[2] = {-128 * block_sum, -8 * block_sum};
        std::memcpy(rec + layout.bsum_offset + b * 8, starts, 8);
        continue;
      }
#endif
      int32_t block_sum = 0;
      for (size_t j = 0; j < 8; ++j) {
        const int8_t* g = q + b * 32 + 4 * j;
        block_sum += g[0] + g[1] + g[2] + g[3];
        const int32_t corr = -128 * (g[0] + g[1] + g[2] + g[3]);
        std::memcpy(rec + layout.d8_offset + (b * 8 + j) * 4, &d, 4);
        std::memcpy(rec + layout.corr_offset + (b * 8 + j) * 4, &corr, 4);
      }
      const int32_t starts[2] = {-128 * block_sum, -8 * block_sum};
      std::memcpy(rec + layout.bsum_offset + b * 8, starts, 8);
    }
    std::memset(rec + layout.used, 0, layout.stride - layout.used);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace fgemma
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace fgemma {
HWY_EXPORT(MatMulQuantImpl);
HWY_EXPORT(PackQuantImpl);
HWY_EXPORT(X86PanelRowsImpl);

namespace kernels_internal {
void MatMulQuant(const KernelMatrix& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                 size_t row_end) {
  HWY_DYNAMIC_DISPATCH(MatMulQuantImpl)(w, a, y, y_stride, row_begin, row_end);
}
void PackQuant(size_t cols, const float* x, size_t x_stride, size_t num_tokens, uint8_t* out) {
  HWY_DYNAMIC_DISPATCH(PackQuantImpl)(cols, x, x_stride, num_tokens, out);
}
size_t X86PanelRows() { return HWY_DYNAMIC_DISPATCH(X86PanelRowsImpl)(); }
bool InterleavedKernelAvailable() { return ArmDotActive() || X86PanelRows() > 0; }
}  // namespace kernels_internal
}  // namespace fgemma
#endif  // HWY_ONCE
