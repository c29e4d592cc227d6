// Highway implementations of attention.h, plus the scalar references.
//
// Scores: each key row is loaded once per vector of columns and multiplied into two accumulators
// per query head of the group; two keys share each query load for groups of up to 4 heads, and the
// group's sums are reduced four heads at a time (one transpose-and-add tree).
// Mix: for each block of columns the group's accumulators stay in registers across all value rows,
// so every value row is read once and the output is written once (instead of a load/store of the
// output per row).
#include <type_traits>

#include "kernels/simd_config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/attention.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/attention.h"
#include "kernels/simd_common-inl.h"

HWY_BEFORE_NAMESPACE();
namespace fgemma {
namespace HWY_NAMESPACE {

// x86 FMAs take a memory operand, and GCC folds a loaded vector into every FMA that uses it: a query
// vector used by kK keys would be loaded kK times. The scores loop is bound by loads (AVX-512 on
// Zen 5: 20 loads for 16 FMAs before, 12 after), so the loaded value is pinned to a register.
template <class V>
HWY_INLINE void KeepInRegister(V& v) {
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
  asm("" : "+v"(v.raw));
#else
  (void)v;
#endif
}

// Scores of kK keys for the G heads of a group. Each (head, key) score is the same sequence of
// operations whatever keys it is tiled with (two FMA chains over the columns, then StoreSums4's
// reduction tree for heads in fours), so a key's score never depends on the run layout or on the
// position of the key in a tile: a batch of positions scores exactly like one position at a time.
template <size_t G, size_t kK>
HWY_INLINE void ScoreKeys(const float* q, size_t q_stride, const float* const* keys, size_t hd, float* scores,
                          size_t scores_stride, size_t j_out) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const size_t vec_end = hd / N * N;
  hn::Vec<decltype(d)> a0[kK][G], a1[kK][G];
  for (size_t kk = 0; kk < kK; ++kk)
    for (size_t g = 0; g < G; ++g) a0[kk][g] = a1[kk][g] = hn::Zero(d);
  size_t c = 0;
  for (; c + 2 * N <= vec_end; c += 2 * N) {
    hn::Vec<decltype(d)> k0[kK], k1[kK];
    for (size_t kk = 0; kk < kK; ++kk) {
      k0[kk] = hn::LoadU(d, keys[kk] + c);
      k1[kk] = hn::LoadU(d, keys[kk] + c + N);
    }
    for (size_t g = 0; g < G; ++g) {
      auto q0 = hn::LoadU(d, q + g * q_stride + c), q1 = hn::LoadU(d, q + g * q_stride + c + N);
      KeepInRegister(q0);
      KeepInRegister(q1);
      for (size_t kk = 0; kk < kK; ++kk) {
        a0[kk][g] = hn::MulAdd(q0, k0[kk], a0[kk][g]);
        a1[kk][g] = hn::MulAdd(q1, k1[kk], a1[kk][g]);
      }
    }
  }
  for (; c < vec_end; c += N) {
    for (size_t g = 0; g < G; ++g) {
      const auto q0 = hn::LoadU(d, q + g * q_stride + c);
      for (size_t kk = 0; kk < kK; ++kk) a0[kk][g] = hn::MulAdd(q0, hn::LoadU(d, keys[kk] + c), a0[kk][g]);
    }
  }
  for (size_t kk = 0; kk < kK; ++kk) {
    constexpr size_t kPadded = (G + 3) / 4 * 4;
    hn::Vec<decltype(d)> sum[kPadded];
    for (size_t g = 0; g < kPadded; ++g) sum[g] = g < G ? hn::Add(a0[kk][g], a1[kk][g]) : hn::Zero(d);
    float s[kPadded];
    for (size_t g = 0; g < kPadded; g += 4) StoreSums4(d, sum[g], sum[g + 1], sum[g + 2], sum[g + 3], s + g);
    if (vec_end == hd) {  // no tail columns (head_dim 256)
      for (size_t g = 0; g < G; ++g) scores[g * scores_stride + j_out + kk] = s[g];
      continue;
    }
    // Tail columns through one-lane vectors (as in MixT): the same rounding in every instance.
    const hn::CappedTag<float, 1> d1;
    for (size_t g = 0; g < G; ++g) {
      auto sum1 = hn::Set(d1, s[g]);
      for (size_t t = vec_end; t < hd; ++t)
        sum1 = hn::MulAdd(hn::LoadU(d1, q + g * q_stride + t), hn::LoadU(d1, keys[kk] + t), sum1);
      scores[g * scores_stride + j_out + kk] = hn::GetLane(sum1);
    }
  }
}

// ScoreKeysByChain<4, 4> keeps 16 accumulators, 4 query vectors and a key in registers: only where
// there are 32 (AVX-512, AArch64); AVX2, SSE4 and AArch32 NEON have 16 and would spill.
#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3) || HWY_ARCH_ARM_A64
constexpr bool kThirtyTwoVectorRegisters = true;
#else
constexpr bool kThirtyTwoVectorRegisters = false;
#endif

// The same scores as ScoreKeys<G, kK> (each accumulator gets the same FMAs in the same order, then
// the same sum and reduction), for more keys at a time: the two column chains run one after the
// other instead of interleaved, so kK keys x G heads accumulators fit in registers with the G query
// vectors of a column held across all the keys (per column vector, kK + G loads for kK * G FMAs:
// 8 for 16 at 4 x 4, against 12 for 16 in ScoreKeys<4, 2>). Needs hd a multiple of 2 * lanes.
template <size_t G, size_t kK>
HWY_INLINE void ScoreKeysByChain(const float* q, size_t q_stride, const float* const* keys, size_t hd, float* scores,
                                 size_t scores_stride, size_t j_out) {
  static_assert(G % 4 == 0, "the reduction takes heads in fours");
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  HWY_ALIGN float first_chain[kK * G * hn::MaxLanes(d)];
  hn::Vec<decltype(d)> acc[kK][G];
  for (size_t chain = 0; chain < 2; ++chain) {
    for (size_t kk = 0; kk < kK; ++kk)
      for (size_t g = 0; g < G; ++g) acc[kk][g] = hn::Zero(d);
    for (size_t c = chain * N; c < hd; c += 2 * N) {
      hn::Vec<decltype(d)> qv[G];
      for (size_t g = 0; g < G; ++g) {
        qv[g] = hn::LoadU(d, q + g * q_stride + c);
        KeepInRegister(qv[g]);
      }
      for (size_t kk = 0; kk < kK; ++kk) {
        auto kv = hn::LoadU(d, keys[kk] + c);
        KeepInRegister(kv);
        for (size_t g = 0; g < G; ++g) acc[kk][g] = hn::MulAdd(qv[g], kv, acc[kk][g]);
      }
    }
    if (chain == 0) {
      for (size_t kk = 0; kk < kK; ++kk)
        for (size_t g = 0; g < G; ++g) hn::Store(acc[kk][g], d, first_chain + (kk * G + g) * N);
    }
  }
  for (size_t kk = 0; kk < kK; ++kk) {
    hn::Vec<decltype(d)> sum[G];
    for (size_t g = 0; g < G; ++g) sum[g] = hn::Add(hn::Load(d, first_chain + (kk * G + g) * N), acc[kk][g]);
    float s[G];
    for (size_t g = 0; g < G; g += 4) StoreSums4(d, sum[g], sum[g + 1], sum[g + 2], sum[g + 3], s + g);
    for (size_t g = 0; g < G; ++g) scores[g * scores_stride + j_out + kk] = s[g];
  }
}

// Walks the keys of the runs kK at a time: tile(keys, j) for each whole tile of keys j..j+kK-1,
// then tail(keys, n, j) for the n < kK left over.
template <size_t kK, class Tile, class Tail>
HWY_INLINE void ForKeyTiles(const KvRun* runs, size_t num_runs, size_t kv_stride, Tile&& tile, Tail&& tail) {
  const float* keys[kK];
  size_t pending = 0, j_out = 0;
  for (size_t r = 0; r < num_runs; ++r) {
    for (size_t j = 0; j < runs[r].count; ++j) {
      keys[pending++] = runs[r].rows + j * kv_stride;
      if (pending == kK) {
        tile(keys, j_out);
        j_out += kK;
        pending = 0;
      }
    }
  }
  if (pending > 0) tail(keys, pending, j_out);
}

template <size_t G>
HWY_INLINE void ScoresT(const float* q, size_t q_stride, const KvRun* runs, size_t num_runs, size_t kv_stride,
                        size_t hd, float* scores, size_t scores_stride) {
  if constexpr (G == 4) {
    // A query head group of 4 (Gemma 3 270m): the chains one after the other, four keys a pass
    // with 32 registers, two with 16 (8 accumulators, the group's 4 query vectors and a key;
    // ScoreKeys<4, 2> would need 22 there and spill).
    constexpr size_t kKeys = kThirtyTwoVectorRegisters ? 4 : 2;
    if (hd % (2 * hn::Lanes(hn::ScalableTag<float>())) == 0) {
      ForKeyTiles<kKeys>(
          runs, num_runs, kv_stride,
          [&](const float* const* keys, size_t j) { ScoreKeysByChain<G, kKeys>(q, q_stride, keys, hd, scores, scores_stride, j); },
          [&](const float* const* keys, size_t n, size_t j) {
            for (size_t kk = 0; kk < n; ++kk) ScoreKeys<G, 1>(q, q_stride, keys + kk, hd, scores, scores_stride, j + kk);
          });
      return;
    }
  }
  // Two keys per pass share the query loads while 2 * G * 2 accumulators fit in registers.
  constexpr size_t kK = G <= 4 ? 2 : 1;
  ForKeyTiles<kK>(
      runs, num_runs, kv_stride,
      [&](const float* const* keys, size_t j) { ScoreKeys<G, kK>(q, q_stride, keys, hd, scores, scores_stride, j); },
      [&](const float* const* keys, size_t, size_t j) { ScoreKeys<G, 1>(q, q_stride, keys, hd, scores, scores_stride, j); });
}

// Output columns [c0, c0 + kV * N) of every head of the group.
template <size_t G, size_t kV>
HWY_INLINE void MixColumns(const float* p, size_t p_stride, const KvRun* runs, size_t num_runs, size_t kv_stride,
                           size_t c0, float* out, size_t out_stride, bool accumulate) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  hn::Vec<decltype(d)> acc[G][kV];
  for (size_t g = 0; g < G; ++g)
    for (size_t v = 0; v < kV; ++v)
      acc[g][v] = accumulate ? hn::LoadU(d, out + g * out_stride + c0 + v * N) : hn::Zero(d);
  size_t j_in = 0;
  for (size_t r = 0; r < num_runs; ++r) {
    for (size_t j = 0; j < runs[r].count; ++j, ++j_in) {
      const float* val = runs[r].rows + j * kv_stride + c0;
      hn::Vec<decltype(d)> x[kV];
      for (size_t v = 0; v < kV; ++v) x[v] = hn::LoadU(d, val + v * N);
      for (size_t g = 0; g < G; ++g) {
        const auto w = hn::Set(d, p[g * p_stride + j_in]);
        for (size_t v = 0; v < kV; ++v) acc[g][v] = hn::MulAdd(w, x[v], acc[g][v]);
      }
    }
  }
  for (size_t g = 0; g < G; ++g)
    for (size_t v = 0; v < kV; ++v) hn::StoreU(acc[g][v], d, out + g * out_stride + c0 + v * N);
}

template <size_t G>
HWY_INLINE void MixT(const float* p, size_t p_stride, const KvRun* runs, size_t num_runs, size_t kv_stride, size_t hd,
                     float* out, size_t out_stride, bool accumulate) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  // G * kV accumulators, kV value vectors and a weight within the registers (16 on AVX2, SSE4 and
  // AArch32 NEON: 4 x 4 would spill there). A column's sum is the same whatever kV.
  constexpr size_t kV = kThirtyTwoVectorRegisters ? (G <= 4 ? 4 : 2) : (G <= 2 ? 4 : G <= 4 ? 2 : 1);
  size_t c = 0;
  for (; c + kV * N <= hd; c += kV * N) MixColumns<G, kV>(p, p_stride, runs, num_runs, kv_stride, c, out, out_stride, accumulate);
  for (; c + N <= hd; c += N) MixColumns<G, 1>(p, p_stride, runs, num_runs, kv_stride, c, out, out_stride, accumulate);
  if (c == hd) return;
  // Tail columns through one-lane vectors: a plain loop would be vectorized over the keys by the
  // compiler (multiplies unfused, for long enough runs only), so a column's bits would depend on
  // how its keys are split into runs; MulAdd rounds the same way for every key.
  const hn::CappedTag<float, 1> d1;
  for (size_t g = 0; g < G; ++g) {
    for (size_t t = c; t < hd; ++t) {
      auto s = accumulate ? hn::LoadU(d1, out + g * out_stride + t) : hn::Zero(d1);
      size_t j_in = 0;
      for (size_t r = 0; r < num_runs; ++r)
        for (size_t j = 0; j < runs[r].count; ++j, ++j_in)
          s = hn::MulAdd(hn::Set(d1, p[g * p_stride + j_in]), hn::LoadU(d1, runs[r].rows + j * kv_stride + t), s);
      hn::StoreU(s, d1, out + g * out_stride + t);
    }
  }
}

// Calls f(std::integral_constant<size_t, G>()) for the run-time group size G in 1..kMaxAttentionGroup.
template <class F>
HWY_INLINE void WithGroupSize(size_t groups, F&& f) {
  switch (groups) {
    case 1: return f(std::integral_constant<size_t, 1>());
    case 2: return f(std::integral_constant<size_t, 2>());
    case 3: return f(std::integral_constant<size_t, 3>());
    case 4: return f(std::integral_constant<size_t, 4>());
    case 5: return f(std::integral_constant<size_t, 5>());
    case 6: return f(std::integral_constant<size_t, 6>());
    case 7: return f(std::integral_constant<size_t, 7>());
    case 8: return f(std::integral_constant<size_t, 8>());
    default: HWY_ASSERT(groups == 0);
  }
}
static_assert(kMaxAttentionGroup == 8, "WithGroupSize covers 1..kMaxAttentionGroup");

void AttentionScoresImpl(const float* q, size_t q_stride, size_t groups, const KvRun* runs, size_t num_runs,
                         size_t kv_stride, size_t hd, float* scores, size_t scores_stride) {
  WithGroupSize(groups, [&](auto g) {
    ScoresT<decltype(g)::value>(q, q_stride, runs, num_runs, kv_stride, hd, scores, scores_stride);
  });
}

void AttentionMixImpl(const float* p, size_t p_stride, size_t groups, const KvRun* runs, size_t num_runs,
                      size_t kv_stride, size_t hd, float* out, size_t out_stride, bool accumulate) {
  WithGroupSize(groups, [&](auto g) {
    MixT<decltype(g)::value>(p, p_stride, runs, num_runs, kv_stride, hd, out, out_stride, accumulate);
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace fgemma
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace fgemma {
HWY_EXPORT(AttentionScoresImpl);
HWY_EXPORT(AttentionMixImpl);

void AttentionScores(const float* q, size_t q_stride, size_t groups, const KvRun* runs, size_t num_runs,
                     size_t kv_stride, size_t head_dim, float* scores, size_t scores_stride) {
  HWY_DYNAMIC_DISPATCH(AttentionScoresImpl)(q, q_stride, groups, runs, num_runs, kv_stride, head_dim, scores,
                                            scores_stride);
}

void AttentionMix(const float* p, size_t p_stride, size_t groups, const KvRun* runs, size_t num_runs,
                  size_t kv_stride, size_t head_dim, float* out, size_t out_stride, bool accumulate) {
  HWY_DYNAMIC_DISPATCH(AttentionMixImpl)(p, p_stride, groups, runs, num_runs, kv_stride, head_dim, out, out_stride,
                                         accumulate);
}

void AttentionScoresReference(const float* q, size_t q_stride, size_t groups, const KvRun* runs, size_t num_runs,
                              size_t kv_stride, size_t head_dim, float* scores, size_t scores_stride) {
  for (size_t g = 0; g < groups; ++g) {
    size_t j_out = 0;
    for (size_t r = 0; r < num_runs; ++r) {
      for (size_t j = 0; j < runs[r].count; ++j, ++j_out) {
        double s = 0;
        for (size_t t = 0; t < head_dim; ++t) s += static_cast<double>(q[g * q_stride + t]) * runs[r].rows[j * kv_stride + t];
        scores[g * scores_stride + j_out] = static_cast<float>(s);
      }
    }
  }
}

void AttentionMixReference(const float* p, size_t p_stride, size_t groups, const KvRun* runs, size_t num_runs,
                           size_t kv_stride, size_t head_dim, float* out, size_t out_stride, bool accumulate) {
  for (size_t g = 0; g < groups; ++g) {
    for (size_t t = 0; t < head_dim; ++t) {
      double s = accumulate ? out[g * out_stride + t] : 0.0;
      size_t j_in = 0;
      for (size_t r = 0; r < num_runs; ++r)
        for (size_t j = 0; j < runs[r].count; ++j, ++j_in)
          s += static_cast<double>(p[g * p_stride + j_in]) * runs[r].rows[j * kv_stride + t];
      out[g * out_stride + t] = static_cast<float>(s);
    }
  }
}
}  // namespace fgemma
#endif  // HWY_ONCE
