// MatMul for float weights (f32, f16, bf16) on float32 activations, Highway for every target.
//
// Exactness: weights are widened to float32 exactly and multiplied-accumulated in float32 FMA lanes
// (no rounding of activations). The only difference from MatMulReference (double accumulation) is
// the float32 summation order, so |y - ref| <= cols * 2^-24 * sum_k |w_k x_k| (in practice ~1e-7
// relative to that sum).
//
// Blocking: a tile of kRows weight rows x kTokens tokens keeps kRows*kTokens accumulators in
// registers; each weight vector is widened once and reused across kTokens tokens (prefill), and
// decode (one token) streams kRows rows in parallel. Horizontal sums use one transpose tree per
// four rows (StoreSums4).
#include <type_traits>

#include "kernels/simd_config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/matmul_float.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/matmul_internal.h"
#include "kernels/simd_common-inl.h"

HWY_BEFORE_NAMESPACE();
namespace fgemma {
namespace HWY_NAMESPACE {
namespace {

template <class DF>
HWY_INLINE hn::Vec<DF> LoadWeights(DF df, const float* p) {
  return hn::LoadU(df, p);
}
template <class DF>
HWY_INLINE hn::Vec<DF> LoadWeights(DF df, const hwy::bfloat16_t* p) {
  const hn::Rebind<hwy::bfloat16_t, DF> dbf;
  return hn::PromoteTo(df, hn::LoadU(dbf, p));
}
template <class DF>
HWY_INLINE hn::Vec<DF> LoadWeights(DF df, const hwy::float16_t* p) {
  const hn::Rebind<hwy::float16_t, DF> df16;
  return hn::PromoteTo(df, hn::LoadU(df16, p));
}

// Tile kernel: y[t][r] = dot(W row r, x_t) for a kR x kT tile, any alignment, any cols.
template <typename WT>
struct FloatKernel {
  template <size_t kR, size_t kT>
  static HWY_NOINLINE void Tile(const TileJob& job, size_t row, size_t token) {
    const hn::ScalableTag<float> df;
    using V = hn::Vec<decltype(df)>;
    const size_t N = hn::Lanes(df);
    const size_t cols = job.cols;
    const TilePointers<kR, kT> tile(job, row, token);
    V acc[kR][kT];
    ZeroTile(df, acc);
    const WT* wr[kR];
    for (size_t r = 0; r < kR; ++r) wr[r] = reinterpret_cast<const WT*>(tile.w[r]);
    const float* xt[kT];
    for (size_t t = 0; t < kT; ++t) xt[t] = reinterpret_cast<const float*>(tile.x[t]);

    size_t k = 0;
#if HWY_TARGET != HWY_SCALAR
    if constexpr (kT == 1 && !std::is_same_v<WT, float>) {
      // Decode streams 16-bit weights: a cache line of each row a step, one prefetch for it, each
      // full vector of 2N values widened in two halves (aarch64: ld1 + fcvtl + fcvtl2 for 8 values
      // instead of a load and a widening per 4). Every accumulator takes the FMAs of the loop below
      // in the same order, so the bits are those of the multi-token tiles.
      const hn::Repartition<uint16_t, decltype(df)> du16;  // 2N lanes
      const hn::Half<decltype(du16)> du16_half;             // N lanes
      const hn::Rebind<WT, decltype(df)> dw;                // N lanes of WT
      constexpr size_t kLineValues = 64 / sizeof(WT);
      const size_t step = HWY_MAX(kLineValues, 2 * N);
      for (; k + step <= cols; k += step) {
        for (size_t r = 0; r < kR; ++r) hwy::Prefetch(reinterpret_cast<const uint8_t*>(wr[r] + k) + kR * job.w_row_bytes);
        for (size_t c = k; c < k + step; c += 2 * N) {
          const V x_lo = hn::LoadU(df, xt[0] + c), x_hi = hn::LoadU(df, xt[0] + c + N);
          for (size_t r = 0; r < kR; ++r) {
            const auto both = hn::LoadU(du16, reinterpret_cast<const uint16_t*>(wr[r] + c));
            const V w_lo = hn::PromoteTo(df, hn::BitCast(dw, hn::LowerHalf(du16_half, both)));
            const V w_hi = hn::PromoteTo(df, hn::BitCast(dw, hn::UpperHalf(du16_half, both)));
            acc[r][0] = hn::MulAdd(w_lo, x_lo, acc[r][0]);
            acc[r][0] = hn::MulAdd(w_hi, x_hi, acc[r][0]);
          }
        }
      }
    }
#endif
    for (; k + N <= cols; k += N) {
      V wv[kR];
      for (size_t r = 0; r < kR; ++r) {
        // The next tile's rows: with short rows the hardware prefetcher falls behind in decode.
        hwy::Prefetch(reinterpret_cast<const uint8_t*>(wr[r] + k) + kR * job.w_row_bytes);
        wv[r] = LoadWeights(df, wr[r] + k);
      }
      for (size_t t = 0; t < kT; ++t) {
        const V xv = hn::LoadU(df, xt[t] + k);
        for (size_t r = 0; r < kR; ++r) acc[r][t] = hn::MulAdd(wv[r], xv, acc[r][t]);
      }
    }
    if (k < cols) {  // zero-padded tail (cols not a multiple of the vector width)
      constexpr size_t kMaxN = HWY_MAX_BYTES / sizeof(float);
      const size_t rem = cols - k;
      V wv[kR];
      for (size_t r = 0; r < kR; ++r) {
        HWY_ALIGN WT buf[kMaxN] = {};
        std::memcpy(buf, reinterpret_cast<const uint8_t*>(wr[r] + k), rem * sizeof(WT));
        wv[r] = LoadWeights(df, buf);
      }
      for (size_t t = 0; t < kT; ++t) {
        HWY_ALIGN float buf[kMaxN] = {};
        std::memcpy(buf, xt[t] + k, rem * sizeof(float));
        const V xv = hn::Load(df, buf);
        for (size_t r = 0; r < kR; ++r) acc[r][t] = hn::MulAdd(wv[r], xv, acc[r][t]);
      }
    }
    StoreTileSums<kR, kT>(df, acc, job.out(row, token), job.y_stride);
  }
};

// Register tile per target: kFloatRows * kFloatTokens accumulators + kFloatRows weight vectors must
// fit the register file (32 vectors on AVX-512 and aarch64, 16 on AVX2, SSE4 and armv7). Measured
// on AVX-512: 6x4 ~15% faster than 4x4 for f16/bf16 prefill; on AVX2 3x4 is 1.6x faster than a
// spilling 4x4.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_ARCH_ARM_A64
constexpr size_t kFloatRows = 6;
#else
constexpr size_t kFloatRows = 3;
#endif
constexpr size_t kFloatTokens = 4;

template <typename WT>
void MatMulFloatT(const TensorView& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                  size_t row_end) {
  TileJob job;
  job.w = static_cast<const uint8_t*>(w.data);
  job.w_row_bytes = w.row_bytes();
  job.cols = w.cols;
  job.x = reinterpret_cast<const uint8_t*>(a.data);
  job.x_stride = a.stride * sizeof(float);
  job.y = y;
  job.y_stride = y_stride;
  TileMatMul<FloatKernel<WT>, kFloatRows, kFloatTokens>(job, row_begin, row_end, a.num_tokens);
}

}  // namespace

void MatMulFloatImpl(const TensorView& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                     size_t row_end) {
  switch (w.dtype) {
    case DType::kF32: return MatMulFloatT<float>(w, a, y, y_stride, row_begin, row_end);
    case DType::kF16: return MatMulFloatT<hwy::float16_t>(w, a, y, y_stride, row_begin, row_end);
    case DType::kBF16: return MatMulFloatT<hwy::bfloat16_t>(w, a, y, y_stride, row_begin, row_end);
    default: HWY_ASSERT(false);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace fgemma
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace fgemma {
HWY_EXPORT(MatMulFloatImpl);

namespace kernels_internal {
void MatMulFloat(const TensorView& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                 size_t row_end) {
  HWY_DYNAMIC_DISPATCH(MatMulFloatImpl)(w, a, y, y_stride, row_begin, row_end);
}
}  // namespace kernels_internal
}  // namespace fgemma
#endif  // HWY_ONCE
