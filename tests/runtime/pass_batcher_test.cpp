// Sessions sharing forward passes through a PassBatcher (batched serving): driven at the same time
// from several threads, each session gets the bits it gets alone, for full-vocabulary heads
// (computed together in one read of the embedding) and restricted ones, through chunked prefill
// and the sliding ring's wrap; the passes really are shared.
#include <gtest/gtest.h>

#include <optional>
#include <thread>
#include <vector>

#include "runtime/pass_batcher.h"
#include "runtime/session.h"
#include "session_trace.h"
#include "test_support.h"
#include "util/hash.h"

namespace fgemma {
namespace {

using test::Drive;
using test::Prompt;
using test::Trace;

class PassBatcherTest : public ::testing::TestWithParam<const char*> {
 protected:
  std::shared_ptr<const Model> model() {
    if (!model_) model_ = std::shared_ptr<const Model>(Model::Load(test::FixturePath(GetParam())).value());
    return model_;
  }
  std::unique_ptr<Session> NewSession(std::shared_ptr<ThreadPool> pool, std::shared_ptr<PassBatcher> batcher) {
    SessionOptions o;
    o.context = 128;
    o.max_batch = 16;
    o.pool = std::move(pool);
    o.batcher = std::move(batcher);
    auto s = Session::Create(model(), o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return std::move(s).value();
  }
  std::shared_ptr<const Model> model_;
};

TEST_P(PassBatcherTest, ConcurrentSessionsGiveTheBitsOfEachAlone) {
  constexpr size_t kSessions = 4, kSteps = 14;
  const size_t lengths[kSessions] = {40, 29, 3, 57};
  // Every second decode step restricted to these (a constrained decoder's candidate head).
  std::vector<int32_t> candidates;
  for (int32_t id = 5; id < model()->config().vocab_size; id += 997) candidates.push_back(id);
  for (int threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    std::vector<Trace> alone;
    for (size_t i = 0; i < kSessions; ++i)
      alone.push_back(Drive(*NewSession(std::make_shared<ThreadPool>(threads), nullptr), Prompt(lengths[i], static_cast<int32_t>(i)), kSteps, candidates));

    auto pool = std::make_shared<ThreadPool>(threads);
    // Passes of at most 24 rows: the longer prompts join in chunks beside the others' decode steps.
    auto batcher = PassBatcher::Create(model(), 24, 128, pool);
    ASSERT_TRUE(batcher.ok()) << batcher.status().ToString();
    batcher.value()->set_gather_wait(std::chrono::seconds(1));  // shared passes even on a loaded machine
    std::vector<std::unique_ptr<Session>> sessions;
    for (size_t i = 0; i < kSessions; ++i) sessions.push_back(NewSession(pool, batcher.value()));
    for (int round = 0; round < 3; ++round) {
      std::vector<Trace> together(kSessions);
      std::vector<std::thread> drivers;
      for (size_t i = 0; i < kSessions; ++i)
        drivers.emplace_back([&, i] {
          sessions[i]->Reset();
          // Rounds 1 and 2 declare themselves active, so leaders gather them into one pass.
          std::optional<PassBatcher::Participation> active;
          if (round > 0) active.emplace(batcher.value().get());
          together[i] = Drive(*sessions[i], Prompt(lengths[i], static_cast<int32_t>(i)), kSteps, candidates);
        });
      for (auto& d : drivers) d.join();
      for (size_t i = 0; i < kSessions; ++i) EXPECT_EQ(together[i], alone[i]) << "session " << i << ", round " << round;
    }
    const PassBatcher::Stats st = batcher.value()->stats();
    EXPECT_GT(st.shared, 0u) << "no pass served two sessions";
    EXPECT_LE(st.max_sessions, kSessions);
    // Fewer passes than the sessions would run alone: (chunks of 16 + kSteps) each, 3 rounds.
    EXPECT_LT(st.passes, 3u * (3 + 2 + 1 + 4 + kSessions * kSteps));
    std::printf("[ batcher ] %d threads: %llu passes, %llu rows, %llu shared, up to %llu sessions per pass\n", threads,
                static_cast<unsigned long long>(st.passes), static_cast<unsigned long long>(st.rows),
                static_cast<unsigned long long>(st.shared), static_cast<unsigned long long>(st.max_sessions));
  }
}

TEST_P(PassBatcherTest, RefusesMismatchedSessions) {
  auto pool = std::make_shared<ThreadPool>(2);
  auto batcher = PassBatcher::Create(model(), 16, 64, pool).value();
  SessionOptions o;
  o.batcher = batcher;
  o.context = 128;  // beyond the batcher's
  EXPECT_FALSE(Session::Create(model(), o).ok());
  o.context = 64;
  o.pool = std::make_shared<ThreadPool>(2);  // another pool
  EXPECT_FALSE(Session::Create(model(), o).ok());
  o.pool = nullptr;
  o.threads = 3;
  EXPECT_FALSE(Session::Create(model(), o).ok());
  o.threads = 0;
  EXPECT_TRUE(Session::Create(model(), o).ok());
  auto other = std::shared_ptr<const Model>(Model::Load(test::FixturePath(GetParam())).value());
  EXPECT_FALSE(Session::Create(other, o).ok()) << "a batcher serves one model";
}

INSTANTIATE_TEST_SUITE_P(Models, PassBatcherTest,
                         ::testing::Values("models/mini-bf16", "models/mini-q8_0.gguf", "models/mini-q4_0.gguf"));

}  // namespace
}  // namespace fgemma
