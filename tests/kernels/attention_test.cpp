// attention.h kernels on every SIMD target against the scalar (double-accumulated) references:
// groups of 1-8 query heads, head sizes with and without vector tails, keys split into up to three
// runs, strides wider than a head and misaligned pointers. Tolerance: the float32 summation bound
// (n + 8) * 2^-24 * sum |terms| for each output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernel_test_support.h"

namespace fgemma {
namespace {

class AttentionKernelTest : public test::TargetTest {};

using test::RandomNormal;

struct AttentionCase {
  size_t groups, head_dim, kv_stride;
  std::vector<size_t> run_lengths;
};

std::vector<AttentionCase> Cases() {
  std::vector<AttentionCase> cases;
  for (size_t groups : {1, 2, 3, 4, 5, 8}) {
    for (size_t hd : {1, 7, 16, 33, 64, 100, 256}) {
      for (const std::vector<size_t>& runs : std::vector<std::vector<size_t>>{{1}, {5}, {37}, {3, 0, 9}, {20, 13, 1}}) {
        cases.push_back({groups, hd, hd * 2 + 1, runs});
      }
    }
  }
  return cases;
}

TEST_P(AttentionKernelTest, ScoresAndMixMatchTheReference) {
  std::mt19937 rng(17);
  for (const AttentionCase& c : Cases()) {
    SCOPED_TRACE("groups " + std::to_string(c.groups) + " head_dim " + std::to_string(c.head_dim) + " runs " +
                 std::to_string(c.run_lengths.size()));
    size_t total = 0;
    for (size_t len : c.run_lengths) total += len;
    // One key/value pool; each run starts at its own misaligned offset in it.
    std::vector<float> pool_k = RandomNormal(total * c.kv_stride + 64, rng), pool_v = RandomNormal(total * c.kv_stride + 64, rng);
    std::vector<KvRun> keys, values;
    size_t at = 1;
    for (size_t len : c.run_lengths) {
      keys.push_back({pool_k.data() + at, len});
      values.push_back({pool_v.data() + at, len});
      at += len * c.kv_stride + 3;
    }
    const size_t q_stride = c.head_dim + 3, s_stride = total + 5;
    const std::vector<float> q = RandomNormal(c.groups * q_stride + 1, rng);
    std::vector<float> got(c.groups * s_stride + 1, -7.0f), want(got);
    AttentionScores(q.data() + 1, q_stride, c.groups, keys.data(), keys.size(), c.kv_stride, c.head_dim, got.data(),
                    s_stride);
    AttentionScoresReference(q.data() + 1, q_stride, c.groups, keys.data(), keys.size(), c.kv_stride, c.head_dim,
                             want.data(), s_stride);
    for (size_t g = 0; g < c.groups; ++g) {
      size_t j = 0;
      for (const KvRun& run : keys) {
        for (size_t r = 0; r < run.count; ++r, ++j) {
          double abs_sum = 0;
          for (size_t t = 0; t < c.head_dim; ++t) abs_sum += std::fabs(q[1 + g * q_stride + t] * run.rows[r * c.kv_stride + t]);
          EXPECT_NEAR(got[g * s_stride + j], want[g * s_stride + j], (c.head_dim + 8) * abs_sum / (1 << 24) + 1e-30)
              << "g " << g << " key " << j;
        }
      }
      for (size_t j2 = total; j2 < s_stride; ++j2) EXPECT_EQ(got[g * s_stride + j2], -7.0f) << "wrote past the keys";
    }

    // Mix with probabilities (any weights work; softmax output is the real input).
    const std::vector<float> p = RandomNormal(c.groups * s_stride, rng);
    const size_t o_stride = c.head_dim + 2;
    std::vector<float> out(c.groups * o_stride + 1, -7.0f), ref(out);
    AttentionMix(p.data(), s_stride, c.groups, values.data(), values.size(), c.kv_stride, c.head_dim, out.data() + 1,
                 o_stride);
    AttentionMixReference(p.data(), s_stride, c.groups, values.data(), values.size(), c.kv_stride, c.head_dim,
                          ref.data() + 1, o_stride);
    EXPECT_EQ(out[0], -7.0f);
    for (size_t g = 0; g < c.groups; ++g) {
      for (size_t t = 0; t < c.head_dim; ++t) {
        double abs_sum = 0;
        size_t j = 0;
        for (const KvRun& run : values)
          for (size_t r = 0; r < run.count; ++r, ++j) abs_sum += std::fabs(p[g * s_stride + j] * run.rows[r * c.kv_stride + t]);
        EXPECT_NEAR(out[1 + g * o_stride + t], ref[1 + g * o_stride + t], (total + 8) * abs_sum / (1 << 24) + 1e-30)
            << "g " << g << " column " << t;
      }
      for (size_t t = c.head_dim; t < o_stride && g + 1 < c.groups; ++t)
        EXPECT_EQ(out[1 + g * o_stride + t], -7.0f) << "wrote between heads";
    }
  }
}

// A key's score must not depend on how the keys are split into runs or tiled (a batch of positions
// sees its keys in other runs than one position at a time): every split gives the same bits.
TEST_P(AttentionKernelTest, ScoresDoNotDependOnRunSplits) {
  std::mt19937 rng(5);
  for (size_t groups : {1, 3, 4, 8}) {
    for (size_t hd : {256, 100}) {
      const size_t total = 23;
      const std::vector<float> k = RandomNormal(total * hd, rng), q = RandomNormal(groups * hd, rng);
      std::vector<float> whole(groups * total);
      const KvRun one{k.data(), total};
      AttentionScores(q.data(), hd, groups, &one, 1, hd, hd, whole.data(), total);
      for (const std::vector<size_t>& split : std::vector<std::vector<size_t>>{{1, 22}, {2, 1, 20}, {11, 11, 1}, {22, 1}}) {
        std::vector<KvRun> runs;
        size_t at = 0;
        for (size_t len : split) {
          runs.push_back({k.data() + at * hd, len});
          at += len;
        }
        std::vector<float> got(groups * total);
        AttentionScores(q.data(), hd, groups, runs.data(), runs.size(), hd, hd, got.data(), total);
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_EQ(got[i], whole[i]) << "groups " << groups << " hd " << hd << " index " << i;
      }
    }
  }
}

// Nor on the keys beside it: keys are scored in tiles of several (4 keys with the two column chains
// one after the other for 4 heads, 2 interleaved otherwise) and one at a time at the end of the list.
// Starting the list 1-4 keys later moves every key to another place in its tile or into the tail.
TEST_P(AttentionKernelTest, ScoresDoNotDependOnTheKeysBeside) {
  std::mt19937 rng(11);
  for (size_t groups : {1, 2, 4, 8}) {
    for (size_t hd : {256, 64, 100}) {
      const size_t total = 29;
      const std::vector<float> k = RandomNormal(total * hd, rng), q = RandomNormal(groups * hd, rng);
      std::vector<float> whole(groups * total);
      const KvRun all{k.data(), total};
      AttentionScores(q.data(), hd, groups, &all, 1, hd, hd, whole.data(), total);
      for (size_t start = 1; start <= 4; ++start) {
        const size_t n = total - start;
        const KvRun later{k.data() + start * hd, n};
        std::vector<float> got(groups * n);
        AttentionScores(q.data(), hd, groups, &later, 1, hd, hd, got.data(), n);
        for (size_t g = 0; g < groups; ++g)
          for (size_t j = 0; j < n; ++j)
            ASSERT_EQ(got[g * n + j], whole[g * total + start + j])
                << "groups " << groups << " hd " << hd << " start " << start << " key " << j;
      }
    }
  }
}

// The forward pass mixes a row's values key block by key block (accumulate) and, for a lone row,
// in column slices on several threads: both must give the bits of one call over all keys.
TEST_P(AttentionKernelTest, MixInKeyBlocksAndColumnSlicesEqualsOneCall) {
  std::mt19937 rng(9);
  for (size_t groups : {1, 2, 4, 8}) {
    for (size_t hd : {32, 100, 256}) {
      const size_t total = 150, kv_stride = hd + 5;
      const std::vector<float> v = RandomNormal(total * kv_stride + 1, rng), p = RandomNormal(groups * total, rng);
      // Two runs, as a ring that wraps.
      const KvRun runs[2] = {{v.data() + 1 + 90 * kv_stride, 60}, {v.data() + 1, 90}};
      std::vector<float> whole(groups * hd);
      AttentionMix(p.data(), total, groups, runs, 2, kv_stride, hd, whole.data(), hd);
      for (size_t block : {1, 7, 64}) {
        std::vector<float> got(groups * hd, -7.0f);
        for (size_t j0 = 0; j0 < total; j0 += block) {
          KvRun part[2];
          const size_t n = SliceKvRuns(runs, 2, kv_stride, j0, std::min(block, total - j0), part);
          AttentionMix(p.data() + j0, total, groups, part, n, kv_stride, hd, got.data(), hd, j0 > 0);
        }
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_EQ(got[i], whole[i]) << "groups " << groups << " hd " << hd << " block " << block << " index " << i;
      }
      for (size_t width : {16, 32}) {
        if (hd % width != 0) continue;
        std::vector<float> got(groups * hd, -7.0f);
        for (size_t c0 = 0; c0 < hd; c0 += width) {
          const KvRun cols[2] = {{runs[0].rows + c0, runs[0].count}, {runs[1].rows + c0, runs[1].count}};
          AttentionMix(p.data(), total, groups, cols, 2, kv_stride, width, got.data() + c0, hd);
        }
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_EQ(got[i], whole[i]) << "groups " << groups << " hd " << hd << " width " << width << " index " << i;
      }
    }
  }
}

TEST(SliceKvRuns, CutsAcrossRunBoundaries) {
  std::vector<float> pool(100);
  const KvRun runs[3] = {{pool.data() + 50, 3}, {pool.data(), 0}, {pool.data() + 10, 4}};
  KvRun out[3];
  ASSERT_EQ(SliceKvRuns(runs, 3, 2, 2, 3, out), 2u);  // the last key of run 0, two of run 2
  EXPECT_EQ(out[0].rows, pool.data() + 54);
  EXPECT_EQ(out[0].count, 1u);
  EXPECT_EQ(out[1].rows, pool.data() + 10);
  EXPECT_EQ(out[1].count, 2u);
  ASSERT_EQ(SliceKvRuns(runs, 3, 2, 5, 2, out), 1u);
  EXPECT_EQ(out[0].rows, pool.data() + 14);
  EXPECT_EQ(out[0].count, 2u);
  EXPECT_EQ(SliceKvRuns(runs, 3, 2, 0, 0, out), 0u);
}

INSTANTIATE_TEST_SUITE_P(Targets, AttentionKernelTest, ::testing::ValuesIn(KernelTargets()),
                         test::TargetParamName);

}  // namespace
}  // namespace fgemma
