// Per-target helpers shared by the kernel translation units (Highway multiple-inclusion header:
// include after hwy/highway.h, inside no namespace; it opens fgemma::HWY_NAMESPACE itself).
#if defined(FGEMMA_KERNELS_SIMD_COMMON_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef FGEMMA_KERNELS_SIMD_COMMON_INL_H_
#undef FGEMMA_KERNELS_SIMD_COMMON_INL_H_
#else
#define FGEMMA_KERNELS_SIMD_COMMON_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace fgemma {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
// Adds the 128-bit blocks of v together: returns a vector of 4 floats (lane i = sum of lane i of
// every block).
template <class D>
HWY_INLINE hn::Vec<hn::Full128<float>> FoldBlocks(D d, hn::Vec<D> v) {
  if constexpr (hn::MaxLanes(d) > 4) {
    const hn::Half<D> dh;
    return FoldBlocks(dh, hn::Add(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v)));
  } else {
    return v;
  }
}
#endif

// out[0..3] = horizontal sums of a, b, c, e (one transpose-and-add tree instead of four separate
// reductions).
template <class D>
HWY_INLINE void StoreSums4(D d, hn::Vec<D> a, hn::Vec<D> b, hn::Vec<D> c, hn::Vec<D> e, float* out) {
#if HWY_TARGET == HWY_SCALAR
  out[0] = hn::GetLane(a);
  out[1] = hn::GetLane(b);
  out[2] = hn::GetLane(c);
  out[3] = hn::GetLane(e);
#else
  const auto ab = hn::Add(hn::InterleaveLower(d, a, b), hn::InterleaveUpper(d, a, b));  // a02 b02 a13 b13
  const auto ce = hn::Add(hn::InterleaveLower(d, c, e), hn::InterleaveUpper(d, c, e));
  const hn::Repartition<uint64_t, D> d64;
  const auto lo = hn::BitCast(d, hn::InterleaveLower(d64, hn::BitCast(d64, ab), hn::BitCast(d64, ce)));
  const auto hi = hn::BitCast(d, hn::InterleaveUpper(d64, hn::BitCast(d64, ab), hn::BitCast(d64, ce)));
  hn::StoreU(FoldBlocks(d, hn::Add(lo, hi)), hn::Full128<float>(), out);
#endif
}

template <class D>
HWY_INLINE float SumOfVector(D d, hn::Vec<D> v) {
  return hn::GetLane(hn::SumOfLanes(d, v));
}

// Stores the sums of acc[r][t] (kR rows x kT tokens of vectors) to y[t * y_stride + r].
template <size_t kR, size_t kT, class D, class V>
HWY_INLINE void StoreTileSums(D d, const V (&acc)[kR][kT], float* y, size_t y_stride) {
  for (size_t t = 0; t < kT; ++t) {
    size_t r = 0;
    if constexpr (kR >= 4) {
      for (; r + 4 <= kR; r += 4) {
        StoreSums4(d, acc[r][t], acc[r + 1][t], acc[r + 2][t], acc[r + 3][t], y + t * y_stride + r);
      }
    }
    for (; r < kR; ++r) y[t * y_stride + r] = SumOfVector(d, acc[r][t]);
  }
}

// One MatMul call's operands, for the tile drivers below.
struct TileJob {
  const uint8_t* w = nullptr;  // weight row 0 (the caller's row_begin is applied via `row`)
  size_t w_row_bytes = 0;
  size_t cols = 0;
  const uint8_t* x = nullptr;  // token 0: float activations, or the packed quantized record
  size_t x_stride = 0;         // bytes between tokens
  float* y = nullptr;
  size_t y_stride = 0;         // floats between tokens
  size_t d8_offset = 0;        // packed layout (quantized kernels only)
  size_t corr_offset = 0;
  size_t bsum_offset = 0;

  const uint8_t* row(size_t r) const { return w + r * w_row_bytes; }
  const uint8_t* token(size_t t) const { return x + t * x_stride; }
  float* out(size_t r, size_t t) const { return y + t * y_stride + r; }
};

// The row and token pointers of one register tile. (The accumulators stay a local array in each
// kernel: GCC keeps those in registers, but spills them to the stack when they are a member.)
template <size_t kR, size_t kT>
struct TilePointers {
  const uint8_t* w[kR];
  const uint8_t* x[kT];

  HWY_INLINE TilePointers(const TileJob& job, size_t row, size_t token) {
    for (size_t r = 0; r < kR; ++r) w[r] = job.row(row + r);
    for (size_t t = 0; t < kT; ++t) x[t] = job.token(token + t);
  }
};

template <size_t kR, size_t kT, class D, class V>
HWY_INLINE void ZeroTile(D d, V (&acc)[kR][kT]) {
  for (size_t r = 0; r < kR; ++r) {
    for (size_t t = 0; t < kT; ++t) acc[r][t] = hn::Zero(d);
  }
}

// Runs K::Tile<kR, kT>(job, row, token) for tokens [t, t_end) in tiles of kT, then halves kT for
// the remainder (kT must be a power of two).
template <class K, size_t kR, size_t kT>
HWY_INLINE void TileTokens(const TileJob& job, size_t row, size_t t, size_t t_end) {
  for (; t + kT <= t_end; t += kT) K::template Tile<kR, kT>(job, row, t);
  if constexpr (kT > 1) TileTokens<K, kR, kT / 2>(job, row, t, t_end);
}

// Covers rows [row_begin, row_end) x tokens [0, num_tokens) with kRows x kTokens register tiles;
// leftover rows go one at a time. Tokens are processed in blocks whose activations stay in L2
// (kTokenBlockBytes) while the weight rows stream past them once per block.
// Tokens a block of `budget_bytes` of activations holds at `x_stride` bytes a token, in whole tiles
// of `tile_tokens` (at least one tile; the stride may be 0 for one token).
HWY_INLINE size_t TokensPerBlock(size_t x_stride, size_t tile_tokens, size_t budget_bytes) {
  return HWY_MAX(tile_tokens, budget_bytes / (HWY_MAX(x_stride, size_t{1}) * tile_tokens) * tile_tokens);
}

template <class K, size_t kRows, size_t kTokens>
HWY_INLINE void TileMatMul(const TileJob& job, size_t row_begin, size_t row_end, size_t num_tokens) {
  const size_t block = TokensPerBlock(job.x_stride, kTokens, 256 * 1024);
  for (size_t t0 = 0; t0 < num_tokens; t0 += block) {
    const size_t t1 = HWY_MIN(num_tokens, t0 + block);
    size_t r = row_begin;
    for (; r + kRows <= row_end; r += kRows) TileTokens<K, kRows, kTokens>(job, r, t0, t1);
    for (; r < row_end; ++r) TileTokens<K, 1, kTokens>(job, r, t0, t1);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace fgemma
HWY_AFTER_NAMESPACE();

#endif  // FGEMMA_KERNELS_SIMD_COMMON_INL_H_ toggle
