// MatMul for q4_1, q5_0, q5_1, q4_K, q5_K and q6_K weights (not on AVX2: every one takes the
// 8-row panels of kernels/quant_panels_avx2-inl.h, X86PanelType): the expanded rows of
// kernels/matmul_internal.h (int8 levels, a float scale per 16 values, a float minimum per 32)
// against the int8 packed activations every quantized type shares (QuantLayout).
//
// Per row and token: each 16 values' int32 dot (exact; |level| <= 63, |xq| <= 127) is scaled by
// scale * dx_b and accumulated lane-wise in float32, the lanes summed at the end; the minimums add
// min_b * dx_b * s_b (s_b the sum of the block's xq, from the packed record) in a scalar fold. The
// only approximation beyond float32 rounding is the activations' int8 rounding, as for q8_0 / q4_0
// (kernels/matmul_quant.cpp). Block dots: maddubs + madd a block a 256-bit vector on AVX2 and the
// AVX-512 targets, portable Highway code elsewhere (NEON, SSE4, scalar).
#include "kernels/simd_config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/matmul_kquant.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_internal.h"
#include "kernels/simd_common-inl.h"

#include <cstring>
#include <vector>

HWY_BEFORE_NAMESPACE();
namespace fgemma {
namespace HWY_NAMESPACE {
namespace {

using D16 = hn::CappedTag<int16_t, 16>;
using D32 = hn::RepartitionToWide<D16>;
using DF = hn::Rebind<float, D32>;
using D8 = hn::Rebind<int8_t, D16>;
constexpr size_t kLanes16 = hn::MaxLanes(D16());
constexpr size_t kChunks = 16 / kLanes16;  // vectors per 16 values

struct ExpandedJob {
  const uint8_t* rows;  // the expanded row of the first output row
  size_t row_bytes;
  size_t cols;
  const uint8_t* x;  // packed activations
  size_t x_stride;
  kernels_internal::QuantLayout layout;
  float* y;  // y[t * y_stride + r] for rows r counted from the first
  size_t y_stride;
  const float* min_weights = nullptr;  // [tokens][blocks] KQuantMinWeights (types with minimums)
};

// One expanded row: 32 levels a block, then its header (2 scales a block, then 1 minimum a block).
struct ExpandedLevels {
  const uint8_t* q;
  const uint8_t* scales;
  const uint8_t* mins;
};

// The minimums' term of one row and token: sum_b min_b * t_b with t_b = dx_b * s_b (the token's
// KQuantMinWeights), a float dot product in a fixed order (vector lanes, then the lane sum, then the
// tail), the same whatever the batch or slice.
// `mins` is read as bytes: an expanded row need not be 4-byte aligned (float loads from an unaligned
// address fault on 32-bit Arm). A byte vector bit-cast to floats, not a copy through the stack: the
// copy's two 16-byte stores could not forward to the 32-byte load and stalled every step (45 % of
// q4_K's kernel time on AVX2).
template <class DFloat>
HWY_INLINE hn::Vec<DFloat> LoadFloatBytes(DFloat df, const uint8_t* p) {
#if HWY_TARGET == HWY_SCALAR
  float v;
  std::memcpy(&v, p, 4);
  return hn::Set(df, v);
#else
  return hn::BitCast(df, hn::LoadU(hn::Repartition<uint8_t, DFloat>(), p));
#endif
}

HWY_INLINE float MinFold(const uint8_t* mins, const float* t, size_t nb) {
  const hn::ScalableTag<float> df;
  const size_t n = hn::Lanes(df);
  auto acc = hn::Zero(df);
  size_t b = 0;
  for (; b + n <= nb; b += n) acc = hn::MulAdd(LoadFloatBytes(df, mins + 4 * b), hn::LoadU(df, t + b), acc);
  float m = SumOfVector(df, acc);
  for (; b < nb; ++b) {
    float min;
    std::memcpy(&min, mins + 4 * b, 4);
    m = std::fma(min, t[b], m);
  }
  return m;
}

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// AVX2 (and the AVX-512 targets, which run the same instructions: a vpdpbusd version waits for a
// machine to test it on): a block a vector; maddubs(|w|, sign(x, w)) + madd gives 8 int32 lanes,
// 0-3 the first 16 values, 4-7 the second (|w| <= 32, |x| <= 127: the int16 pair sums cannot
// saturate). kR rows x kT tokens a tile: each token's block is loaded once for the kR rows, each
// row's block once for the kT tokens; every (row, token) takes the same operations in the same
// order whatever the tile, so any tile shape gives the same bits. A row's levels and scales come
// from its expanded row (ExpandedLevels).
constexpr size_t kTileRows = 2, kTileTokens = 4;

// kUnsigned: the levels are never negative (the types with minimums: q4_1, q5_1, q4_K, q5_K levels
// 0..31), so maddubs takes them as they are, without the sign trick (the same int32 sums).
template <bool kUnsigned, size_t kR, size_t kT>
HWY_INLINE void RowDots(const ExpandedJob& job, const ExpandedLevels (&levels)[kR], const uint8_t* const (&x)[kT],
                        float (&out)[kR][kT]) {
  const size_t nb = job.cols / kQuantBlockValues;
  __m256 acc[kR][kT];
  for (size_t r = 0; r < kR; ++r) {
    for (size_t t = 0; t < kT; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  const __m256i ones = _mm256_set1_epi16(1);
  for (size_t b = 0; b < nb; ++b) {
    // Each row's block of levels, and its scales: lanes 0-3 the first 16 values', 4-7 the second's.
    __m256i w[kR], wabs[kR];
    __m256 sc[kR];
    for (size_t r = 0; r < kR; ++r) {
      w[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(levels[r].q + 32 * b));
      float s[2];
      std::memcpy(s, levels[r].scales + 8 * b, 8);
      sc[r] = _mm256_set_m128(_mm_set1_ps(s[1]), _mm_set1_ps(s[0]));
      if constexpr (!kUnsigned) wabs[r] = _mm256_sign_epi8(w[r], w[r]);
    }
    for (size_t t = 0; t < kT; ++t) {
      const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t] + 32 * b));
      const __m256 dx = _mm256_loadu_ps(reinterpret_cast<const float*>(x[t] + job.layout.d8_offset + 32 * b));
      for (size_t r = 0; r < kR; ++r) {
        const __m256i products =
            kUnsigned ? _mm256_maddubs_epi16(w[r], xq) : _mm256_maddubs_epi16(wabs[r], _mm256_sign_epi8(xq, w[r]));
        const __m256i dot = _mm256_madd_epi16(products, ones);
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(sc[r], dx), acc[r][t]);
      }
    }
  }
  const hn::Full256<float> df;
  for (size_t r = 0; r < kR; ++r) {
    for (size_t t = 0; t < kT; ++t) out[r][t] = SumOfVector(df, hn::Vec256<float>{acc[r][t]});
  }
}
#else
// Portable Highway code: int16 lanes (at most 16, so a vector never straddles two scales),
// widening multiply-accumulate; one row at a time, from the expanded copy only.
constexpr size_t kTileRows = 1, kTileTokens = 4;

template <bool kUnsigned, size_t kR, size_t kT>
HWY_INLINE void RowDots(const ExpandedJob& job, const ExpandedLevels (&levels)[kR], const uint8_t* const (&x)[kT],
                        float (&out)[kR][kT]) {
  const D16 d16;
  const D32 d32;
  const DF df;
  const D8 d8;
  const size_t nb = job.cols / kQuantBlockValues;
  for (size_t r = 0; r < kR; ++r) {
    const auto* q = reinterpret_cast<const int8_t*>(levels[r].q);
    hn::Vec<DF> acc[kT];
    for (size_t t = 0; t < kT; ++t) acc[t] = hn::Zero(df);
    for (size_t b = 0; b < nb; ++b) {
      hn::Vec<D16> w[2 * kChunks];
      for (size_t c = 0; c < 2 * kChunks; ++c) w[c] = hn::PromoteTo(d16, hn::LoadU(d8, q + 32 * b + c * kLanes16));
      float scale[2];
      std::memcpy(scale, levels[r].scales + 8 * b, 8);
      for (size_t t = 0; t < kT; ++t) {
        const auto* xq = reinterpret_cast<const int8_t*>(x[t] + 32 * b);
        float dx;
        std::memcpy(&dx, x[t] + job.layout.d8_offset + 32 * b, 4);
        for (size_t h = 0; h < 2; ++h) {
          auto s0 = hn::Zero(d32), s1 = hn::Zero(d32);
          for (size_t c = h * kChunks; c < (h + 1) * kChunks; ++c) {
            s0 = hn::ReorderWidenMulAccumulate(d32, w[c], hn::PromoteTo(d16, hn::LoadU(d8, xq + c * kLanes16)), s0, s1);
          }
          acc[t] = hn::MulAdd(hn::ConvertTo(df, hn::Add(s0, s1)), hn::Set(df, scale[h] * dx), acc[t]);
        }
      }
    }
    for (size_t t = 0; t < kT; ++t) out[r][t] = SumOfVector(df, acc[t]);
  }
}
#endif

// kR rows (output rows from `r`) against kT tokens from `token`: every output takes the same
// operations whatever kR and kT (rows and tokens share only loaded operands).
template <bool kMins, size_t kR, size_t kT>
HWY_NOINLINE void Tile(const ExpandedJob& job, const ExpandedLevels (&levels)[kR], size_t r, size_t token) {
  const uint8_t* x[kT];
  for (size_t t = 0; t < kT; ++t) x[t] = job.x + (token + t) * job.x_stride;
  float dots[kR][kT];
  RowDots</*kUnsigned=*/kMins, kR, kT>(job, levels, x, dots);
  const size_t nb = job.cols / kQuantBlockValues;
  for (size_t i = 0; i < kR; ++i) {
    for (size_t t = 0; t < kT; ++t) {
      float m = 0.0f;  // the minimums' term: the row's stored minimums against the token's weights
      if constexpr (kMins) m = MinFold(levels[i].mins, job.min_weights + (token + t) * nb, nb);
      job.y[(token + t) * job.y_stride + r + i] = dots[i][t] + m;
    }
  }
}

// kR rows against tokens [t0, t1): whole tiles of kTileTokens, then the remainder.
template <bool kMins, size_t kR>
void RowsTokens(const ExpandedJob& job, const ExpandedLevels (&levels)[kR], size_t r, size_t t0, size_t t1) {
  size_t t = t0;
  for (; t + kTileTokens <= t1; t += kTileTokens) Tile<kMins, kR, kTileTokens>(job, levels, r, t);
  static_assert(kTileTokens <= 4);
  switch (t1 - t) {
    case 3: Tile<kMins, kR, 3>(job, levels, r, t); break;
    case 2: Tile<kMins, kR, 2>(job, levels, r, t); break;
    case 1: Tile<kMins, kR, 1>(job, levels, r, t); break;
    default: break;
  }
}

// Row r's expanded row: levels, then its scales and minimums.
ExpandedLevels LevelsOf(const ExpandedJob& job, size_t r) {
  ExpandedLevels levels;
  levels.q = job.rows + r * job.row_bytes;
  levels.scales = levels.q + job.cols;
  levels.mins = levels.scales + job.cols / 16 * 4;
  return levels;
}

// Tokens in blocks whose packed activations stay in L2 (a 512-token prefill of 2048-wide rows packs
// 3.4 MB: streamed from L3 once a row, it halved the kernel's speed), rows in tiles within a block.
template <bool kMins>
void RunRows(const ExpandedJob& job, size_t rows, size_t tokens) {
  const size_t block = TokensPerBlock(job.x_stride, kTileTokens, 192 * 1024);
  for (size_t t0 = 0; t0 < tokens; t0 += block) {
    const size_t t1 = HWY_MIN(tokens, t0 + block);
    size_t r = 0;
    for (; r + kTileRows <= rows; r += kTileRows) {
      ExpandedLevels levels[kTileRows];
      for (size_t i = 0; i < kTileRows; ++i) levels[i] = LevelsOf(job, r + i);
      RowsTokens<kMins, kTileRows>(job, levels, r, t0, t1);
    }
    for (; r < rows; ++r) {
      const ExpandedLevels levels[1] = {LevelsOf(job, r)};
      RowsTokens<kMins, 1>(job, levels, r, t0, t1);
    }
  }
}

ExpandedJob MakeJob(size_t cols, const Activations& a, float* y, size_t y_stride) {
  ExpandedJob job;
  job.cols = cols;
  job.x = static_cast<const uint8_t*>(a.packed);
  job.x_stride = a.packed_stride;
  job.layout = kernels_internal::QuantLayoutFor(cols);
  job.y = y;
  job.y_stride = y_stride;
  return job;
}

// The minimums' token weights (kernels_internal::KQuantMinWeights) of every token, in per-thread
// storage grown to the largest batch once (no allocation in steady decoding).
const float* MinWeights(const ExpandedJob& job, size_t tokens) {
  thread_local std::vector<float> min_weights;
  if (min_weights.size() < tokens * job.layout.blocks) min_weights.resize(tokens * job.layout.blocks);
  for (size_t t = 0; t < tokens; ++t) {
    kernels_internal::KQuantMinWeights(job.layout, job.x + t * job.x_stride, min_weights.data() + t * job.layout.blocks);
  }
  return min_weights.data();
}

}  // namespace

// Rows [0, rows) of the expanded rows at `expanded` into y (column offset included by the caller).
void MatMulExpandedImpl(const uint8_t* expanded, size_t cols, bool mins, const Activations& a, float* y,
                        size_t y_stride, size_t rows) {
  ExpandedJob job = MakeJob(cols, a, y, y_stride);
  job.rows = expanded;
  job.row_bytes = kernels_internal::ExpandedRowBytes(cols);
  if (mins) {
    job.min_weights = MinWeights(job, a.num_tokens);
    RunRows<true>(job, rows, a.num_tokens);
  } else {
    RunRows<false>(job, rows, a.num_tokens);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace fgemma
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/matmul_arm_dot.h"

namespace fgemma {
HWY_EXPORT(MatMulExpandedImpl);

namespace kernels_internal {
void KQuantMinWeights(const QuantLayout& layout, const uint8_t* record, float* t) {
  for (size_t b = 0; b < layout.blocks; ++b) t[b] = BlockMinWeight(record, layout.d8_offset, layout.bsum_offset, b);
}

namespace {
using ArmKernel = void (*)(const ArmKQuantJob&);
// The Arm kernel of kernels/arm_kquant-inl.h the running target takes (smmla, the dot product; NEON
// where the baseline has it), or null: Highway's.
ArmKernel RunningArmKernel() {
#if defined(FGEMMA_ARM_I8MM) && defined(__aarch64__)
  if (ArmI8mmActive()) return ArmKQuantI8mmMatMul;
#endif
#if defined(FGEMMA_ARM_DOT)
  if (ArmDotActive()) return ArmKQuantDotMatMul;
#if defined(__ARM_NEON)
  if (ArmNeonActive()) return ArmKQuantNeonMatMul;
#endif
#endif
  return nullptr;
}

bool ArmExpandedProduct(const uint8_t* expanded, size_t cols, bool mins, bool split, const Activations& a, float* y,
                        size_t y_stride, size_t rows) {
  const ArmKernel kernel = RunningArmKernel();
  if (kernel == nullptr) return false;
  const QuantLayout layout = QuantLayoutFor(cols);
  ArmKQuantJob job;
  job.rows = expanded;
  job.row_bytes = ExpandedRowBytes(cols);
  job.cols = cols;
  job.blocks = layout.blocks;
  job.packed = static_cast<const uint8_t*>(a.packed);
  job.packed_stride = a.packed_stride;
  job.d8_offset = layout.d8_offset;
  job.tokens = a.num_tokens;
  job.y = y;
  job.y_stride = y_stride;
  job.rows_count = rows;
  job.split_scales = split;
  if (mins) {
    // Per thread, grown to the largest batch once (no allocation in steady decoding).
    thread_local std::vector<float> min_weights;
    if (min_weights.size() < a.num_tokens * layout.blocks) min_weights.resize(a.num_tokens * layout.blocks);
    for (size_t t = 0; t < a.num_tokens; ++t) {
      KQuantMinWeights(layout, job.packed + t * a.packed_stride, min_weights.data() + t * layout.blocks);
    }
    job.min_weights = min_weights.data();
  }
  kernel(job);
  return true;
}

// Rows [0, rows) of the expanded rows at `expanded` into y (column offset included by the caller).
void ExpandedProduct(DType type, const uint8_t* expanded, size_t cols, const Activations& a, float* y, size_t y_stride,
                     size_t rows) {
  const bool mins = ExpandedHasMins(type);
  if (ArmExpandedProduct(expanded, cols, mins, type == DType::kQ6_K, a, y, y_stride, rows)) return;
  HWY_DYNAMIC_DISPATCH(MatMulExpandedImpl)(expanded, cols, mins, a, y, y_stride, rows);
}
}  // namespace

bool ArmKQuantActive() { return RunningArmKernel() != nullptr; }

void MatMulKQuant(const KernelMatrix& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                  size_t row_end) {
  const size_t row_bytes = ExpandedRowBytes(w.cols);
  if (w.repacked != nullptr) {
    ExpandedProduct(w.dtype, static_cast<const uint8_t*>(w.repacked) + row_begin * row_bytes, w.cols, a, y + row_begin,
                    y_stride, row_end - row_begin);
    return;
  }
  // The stored layout: expand 16 rows at a time into per-thread scratch, then the same kernel.
  constexpr size_t kChunkRows = 16;
  thread_local std::vector<uint8_t> scratch;
  scratch.resize(kChunkRows * row_bytes);
  for (size_t r0 = row_begin; r0 < row_end; r0 += kChunkRows) {
    const size_t r1 = std::min(row_end, r0 + kChunkRows);
    ExpandRows(w, r0, r1, scratch.data());
    ExpandedProduct(w.dtype, scratch.data(), w.cols, a, y + r0, y_stride, r1 - r0);
  }
}

void MatMulKQuantArmReference(const KernelMatrix& w, const Activations& a, float* y, size_t y_stride,
                              size_t row_begin, size_t row_end) {
  const size_t cols = w.cols, row_bytes = ExpandedRowBytes(cols);
  const QuantLayout layout = QuantLayoutFor(cols);
  const bool mins = ExpandedHasMins(w.dtype);
  std::vector<uint8_t> row(row_bytes);
  std::vector<float> t_b(layout.blocks);
  for (size_t r = row_begin; r < row_end; ++r) {
    ExpandRows(w, r, r + 1, row.data());
    const auto* q = reinterpret_cast<const int8_t*>(row.data());
    for (size_t t = 0; t < a.num_tokens; ++t) {
      const uint8_t* rec = static_cast<const uint8_t*>(a.packed) + t * a.packed_stride;
      KQuantMinWeights(layout, rec, t_b.data());
      float acc = 0.0f;
      for (size_t b = 0; b < layout.blocks; ++b) {
        float dx;
        std::memcpy(&dx, rec + layout.d8_offset + 32 * b, 4);
        // q6_K: a scale per 16 values; the others: one a block (its two copies are equal).
        const size_t parts = w.dtype == DType::kQ6_K ? 2 : 1, part_values = 32 / parts;
        for (size_t h = 0; h < parts; ++h) {
          int32_t dot = 0;
          for (size_t k = 32 * b + part_values * h; k < 32 * b + part_values * (h + 1); ++k) {
            dot += int32_t{q[k]} * int32_t{static_cast<int8_t>(rec[k])};
          }
          float scale;
          std::memcpy(&scale, row.data() + cols + 4 * (2 * b + h), 4);
          acc = std::fma(static_cast<float>(dot), scale * dx, acc);
        }
        if (mins) {
          float min;
          std::memcpy(&min, row.data() + cols + cols / 4 + 4 * b, 4);
          acc = std::fma(min, t_b[b], acc);
        }
      }
      y[t * y_stride + r] = acc;
    }
  }
}
}  // namespace kernels_internal
}  // namespace fgemma
#endif  // HWY_ONCE
