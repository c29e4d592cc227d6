// One forward pass over several sequences (Gemma3Forward::Run with segments, the pass batched
// serving shares between requests) gives every row the bits it gets when its sequence runs alone,
// one token at a time: on float, bf16, q8_0 and q4_0 weights, with 1 and 2 threads, through the
// sliding layers' ring wrapping, with segments of mixed lengths (prefill chunks beside single
// decode tokens) joining and leaving between passes. One sequence is longer than attention's key
// blocks (64 positions), so rows attending together read their keys block by block; with 3
// threads a lone decode row splits its keys and columns between three tasks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "model/gemma3_forward.h"
#include "model/lora_adapter.h"
#include "model/model.h"
#include "test_support.h"
#include "util/thread_pool.h"

namespace fgemma {
namespace {

constexpr size_t kContext = 128;

struct Case {
  const char* model;
  int threads;
  const char* lora = nullptr;  // an adapter under fixtures/lora/, applied at run time
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.model << ", " << c.threads << " threads" << (c.lora ? std::string(", ") + c.lora : std::string());
}

class BatchedForward : public ::testing::TestWithParam<Case> {};

TEST_P(BatchedForward, EveryRowEqualsItsSequenceAlone) {
  auto loaded = Model::Load(test::FixturePath(std::string("models/") + GetParam().model));
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const Model& model = *loaded.value();
  const ModelConfig& c = model.config();
  std::shared_ptr<const LoraAdapter> lora;
  if (GetParam().lora) {
    auto adapter = LoraAdapter::Load(test::FixturePath(std::string("lora/") + GetParam().lora), c);
    ASSERT_TRUE(adapter.ok()) << adapter.status().ToString();
    lora = adapter.value();
  }
  const size_t H = static_cast<size_t>(c.hidden);
  ThreadPool pool(GetParam().threads);

  // Three sequences longer than the sliding window (the ring wraps), of different lengths, one
  // longer than a key block.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> token(3, c.vocab_size - 1);
  std::vector<std::vector<int32_t>> seqs(3);
  const size_t lengths[3] = {41, 23, 90};
  for (size_t s = 0; s < 3; ++s)
    for (size_t i = 0; i < lengths[s]; ++i) seqs[s].push_back(token(rng));

  // Alone, one token at a time: the final hidden state of every position.
  std::vector<std::vector<float>> alone(3);
  for (size_t s = 0; s < 3; ++s) {
    auto f = Gemma3Forward::Create(model, ForwardOptions{.max_batch = 1, .context = kContext, .lora = lora}, GetParam().threads);
    auto cache = KvCache::Create(c, kContext);
    ASSERT_TRUE(f.ok() && cache.ok());
    for (size_t i = 0; i < seqs[s].size(); ++i) {
      f.value()->Run(std::span<const int32_t>(&seqs[s][i], 1), i, cache.value(), pool, nullptr);
      alone[s].insert(alone[s].end(), f.value()->final_hidden(0), f.value()->final_hidden(0) + H);
    }
  }

  // Together: each pass takes a varying share of each unfinished sequence (up to 16 rows in all);
  // sequence 2 joins late.
  auto f = Gemma3Forward::Create(model, ForwardOptions{.max_batch = 16, .context = kContext, .lora = lora}, GetParam().threads);
  ASSERT_TRUE(f.ok());
  std::vector<KvCache> caches;
  for (size_t s = 0; s < 3; ++s) caches.push_back(KvCache::Create(c, kContext).value());
  std::vector<size_t> done(3, 0);
  size_t passes = 0, mixed = 0;
  while (done[0] < lengths[0] || done[1] < lengths[1] || done[2] < lengths[2]) {
    std::vector<ForwardSegment> segments;
    std::vector<size_t> owner;
    size_t rows = 0;
    for (size_t s = 0; s < 3; ++s) {
      if (done[s] == lengths[s] || (s == 2 && passes < 3)) continue;
      const size_t want = (passes + s) % 4 == 0 ? 7 : 1;  // a prefill chunk or one decode token
      const size_t take = std::min({want, lengths[s] - done[s], 16 - rows});
      if (take == 0) continue;
      segments.push_back({std::span<const int32_t>(seqs[s].data() + done[s], take), done[s], &caches[s]});
      owner.push_back(s);
      rows += take;
    }
    f.value()->Run(segments, pool);
    size_t row = 0;
    for (size_t k = 0; k < segments.size(); ++k) {
      const size_t s = owner[k];
      for (size_t i = 0; i < segments[k].tokens.size(); ++i, ++row) {
        const size_t pos = done[s] + i;
        ASSERT_EQ(std::memcmp(f.value()->final_hidden(row), alone[s].data() + pos * H, H * sizeof(float)), 0)
            << "sequence " << s << " position " << pos << " (pass " << passes << ", row " << row << ")";
      }
      done[s] += segments[k].tokens.size();
    }
    mixed += segments.size() > 1;
    ++passes;
  }
  EXPECT_GT(mixed, 10u);
}

INSTANTIATE_TEST_SUITE_P(Models, BatchedForward,
                         ::testing::Values(Case{"tiny-gqa-f32", 1}, Case{"tiny-gqa-f32", 2}, Case{"mini-bf16", 2},
                                           Case{"mini-q8_0.gguf", 1}, Case{"mini-q8_0.gguf", 2},
                                           Case{"mini-q8_0.gguf", 3},
                                           Case{"mini-q4_0.gguf", 2}, Case{"tiny-gqa-f32", 2, "tiny-gqa-lora-s11"},
                                           Case{"mini-bf16", 1, "mini-lora-s14"}, Case{"mini-q8_0.gguf", 2, "mini-lora-s14"}),
                         [](const auto& info) {
                           std::string n = std::string(info.param.model) + "_" + std::to_string(info.param.threads) + "threads" +
                                           (info.param.lora ? std::string("_") + info.param.lora : "");
                           std::replace_if(n.begin(), n.end(), [](char ch) { return !std::isalnum(static_cast<unsigned char>(ch)); }, '_');
                           return n;
                         });

}  // namespace
}  // namespace fgemma
