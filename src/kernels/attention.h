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
// out + g * out_stride = sum_j p[g * p_stride + j] * value_j, values in run order.
void AttentionMix(const float* p, size_t p_stride, size_t groups, const KvRun* runs, size_t num_runs,
                  size_t kv_stride, size_t head_dim, float* out, size_t out_stride);

void AttentionScoresReference(const float* q, size_t q_stride, size_t groups, const KvRun* runs, size_t num_runs,
                              size_t kv_stride, size_t head_dim, float* scores, size_t scores_stride);
void AttentionMixReference(const float* p, size_t p_stride, size_t groups, const KvRun* runs, size_t num_runs,
                           size_t kv_stride, size_t head_dim, float* out, size_t out_stride);

}  // namespace fgemma
