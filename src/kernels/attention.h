// Attention of one position for a group of query heads that share one key/value head (GQA/MQA):
// the scores of every key and the probability-weighted sum of the values, each key and value row
// read once for the whole group. Runtime-dispatched like MatMul; the *Reference functions are the
// scalar definitions the tests compare against.
#pragma once

#include <cstddef>

namespace fgemma {

// `count` consecutive key (or value) rows of one head, `kv_stride` floats apart; the keys of one
// position come as up to three such runs (KV-cache ring wrap, then the current chunk).
struct KvRun {
  const float* rows = nullptr;
  size_t count = 0;
};

// Query heads are q + g * q_stride for g < groups (at most kMaxAttentionGroup); each head has
// head_dim floats. Scores go to scores + g * scores_stride, keys in run order.
inline constexpr size_t kMaxAttentionGroup = 8;
void AttentionScores(const float* q, size_t q_stride, size_t groups, const KvRun* runs, size_t num_runs,
                     size_t kv_stride, size_t head_dim, float* scores, size_t scores_stride);
// out + g * out_stride = sum_j p[g * p_stride + j] * value_j, values in run order. With
// `accumulate`, the sums start from the values already in out instead of zero, each column adding
// in the same order as one call would: mixing the keys block by block (the first block without
// `accumulate`) gives the bits of mixing them all at once.
void AttentionMix(const float* p, size_t p_stride, size_t groups, const KvRun* runs, size_t num_runs,
                  size_t kv_stride, size_t head_dim, float* out, size_t out_stride, bool accumulate = false);

void AttentionScoresReference(const float* q, size_t q_stride, size_t groups, const KvRun* runs, size_t num_runs,
                              size_t kv_stride, size_t head_dim, float* scores, size_t scores_stride);
void AttentionMixReference(const float* p, size_t p_stride, size_t groups, const KvRun* runs, size_t num_runs,
                           size_t kv_stride, size_t head_dim, float* out, size_t out_stride, bool accumulate = false);

// Keys [skip, skip + take) of runs[num_runs] (rows kv_stride floats apart) as at most num_runs
// runs written to out; returns how many. The keys must exist (skip + take <= the runs' total).
inline size_t SliceKvRuns(const KvRun* runs, size_t num_runs, size_t kv_stride, size_t skip, size_t take, KvRun* out) {
  size_t n = 0;
  for (size_t r = 0; r < num_runs && take > 0; ++r) {
    if (skip >= runs[r].count) {
      skip -= runs[r].count;
      continue;
    }
    const size_t count = runs[r].count - skip < take ? runs[r].count - skip : take;
    out[n++] = {runs[r].rows + skip * kv_stride, count};
    take -= count;
    skip = 0;
  }
  return n;
}

}  // namespace fgemma
