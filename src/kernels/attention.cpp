// Highway implementations of attention.h, plus the scalar references.
//
// Scores: each key row is loaded once per vector of columns and multiplied into one accumulator per
// query head of the group (two per head for groups of 1-2, to keep enough independent FMA chains).
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

HWY_BEFORE_NAMESPACE();
namespace fgemma {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <size_t G>
HWY_INLINE void ScoresT(const float* q, size_t q_stride, const KvRun* runs, size_t num_runs, size_t kv_stride,
                        size_t hd, float* scores, size_t scores_stride) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const size_t vec_end = hd / N * N;
  size_t j_out = 0;
  for (size_t r = 0; r < num_runs; ++r) {
    for (size_t j = 0; j < runs[r].count; ++j, ++j_out) {
      const float* k = runs[r].rows + j * kv_stride;
      hn::Vec<decltype(d)> a0[G], a1[G];
      for (size_t g = 0; g < G; ++g) a0[g] = a1[g] = hn::Zero(d);
      size_t c = 0;
      for (; c + 2 * N <= vec_end; c += 2 * N) {
        const auto k0 = hn::LoadU(d, k + c), k1 = hn::LoadU(d, k + c + N);
        for (size_t g = 0; g < G; ++g) {
          a0[g] = hn::MulAdd(hn::LoadU(d, q + g * q_stride + c), k0, a0[g]);
          a1[g] = hn::MulAdd(hn::LoadU(d, q + g * q_stride + c + N), k1, a1[g]);
        }
      }
      for (; c < vec_end; c += N) {
        const auto k0 = hn::LoadU(d, k + c);
        for (size_t g = 0; g < G; ++g) a0[g] = hn::MulAdd(hn::LoadU(d, q + g * q_stride + c), k0, a0[g]);
      }
      for (size_t g = 0; g < G; ++g) {
        float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(a0[g], a1[g])));
        for (size_t t = vec_end; t < hd; ++t) s += q[g * q_stride + t] * k[t];
        scores[g * scores_stride + j_out] = s;
      }
    }
  }
}

// Output columns [c0, c0 + kV * N) of every head of the group.
template <size_t G, size_t kV>
HWY_INLINE void MixColumns(const float* p, size_t p_stride, const KvRun* runs, size_t num_runs, size_t kv_stride,
                           size_t c0, float* out, size_t out_stride) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  hn::Vec<decltype(d)> acc[G][kV];
  for (size_t g = 0; g < G; ++g)
    for (size_t v = 0; v < kV; ++v) acc[g][v] = hn::Zero(d);
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
                     float* out, size_t out_stride) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  constexpr size_t kV = G <= 4 ? 4 : 2;  // G * kV accumulators stay within 16 registers
  size_t c = 0;
  for (; c + kV * N <= hd; c += kV * N) MixColumns<G, kV>(p, p_stride, runs, num_runs, kv_stride, c, out, out_stride);
  for (; c + N <= hd; c += N) MixColumns<G, 1>(p, p_stride, runs, num_runs, kv_stride, c, out, out_stride);
  if (c == hd) return;
  for (size_t g = 0; g < G; ++g) {  // scalar tail columns
    for (size_t t = c; t < hd; ++t) {
      float s = 0;
      size_t j_in = 0;
      for (size_t r = 0; r < num_runs; ++r)
        for (size_t j = 0; j < runs[r].count; ++j, ++j_in) s += p[g * p_stride + j_in] * runs[r].rows[j * kv_stride + t];
      out[g * out_stride + t] = s;
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
                      size_t kv_stride, size_t hd, float* out, size_t out_stride) {
  WithGroupSize(groups, [&](auto g) { MixT<decltype(g)::value>(p, p_stride, runs, num_runs, kv_stride, hd, out, out_stride); });
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
                  size_t kv_stride, size_t head_dim, float* out, size_t out_stride) {
  HWY_DYNAMIC_DISPATCH(AttentionMixImpl)(p, p_stride, groups, runs, num_runs, kv_stride, head_dim, out, out_stride);
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
                           size_t kv_stride, size_t head_dim, float* out, size_t out_stride) {
  for (size_t g = 0; g < groups; ++g) {
    for (size_t t = 0; t < head_dim; ++t) {
      double s = 0;
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
