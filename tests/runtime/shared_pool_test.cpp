// Sessions sharing one thread pool: driven at the same time from two threads, each gives the
// bits it gives alone (the pool serializes their parallel loops; results depend only on the
// thread count). Chunked prefill through the sliding ring's wrap, then greedy decode steps.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "runtime/session.h"
#include "session_trace.h"
#include "test_support.h"
#include "util/hash.h"

namespace fgemma {
namespace {

using test::Drive;
using test::Prompt;
using test::Trace;

class SharedPool : public ::testing::TestWithParam<const char*> {
 protected:
  std::unique_ptr<Session> NewSession(std::shared_ptr<ThreadPool> pool) {
    if (!model_) model_ = std::shared_ptr<const Model>(Model::Load(test::FixturePath(GetParam())).value());
    SessionOptions o;
    o.context = 128;
    o.max_batch = 16;
    o.pool = std::move(pool);
    return Session::Create(model_, o).value();
  }
  std::shared_ptr<const Model> model_;
};

TEST_P(SharedPool, ConcurrentSessionsGiveTheBitsOfEachAlone) {
  for (int threads : {2, 3}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    const std::vector<int32_t> prompt_a = Prompt(40, 1), prompt_b = Prompt(29, 2);
    constexpr size_t kSteps = 12;
    // Alone: each on a pool of its own.
    const Trace alone_a = Drive(*NewSession(std::make_shared<ThreadPool>(threads)), prompt_a, kSteps);
    const Trace alone_b = Drive(*NewSession(std::make_shared<ThreadPool>(threads)), prompt_b, kSteps);
    ASSERT_EQ(alone_a.argmax.size(), kSteps + 1);

    auto pool = std::make_shared<ThreadPool>(threads);
    auto a = NewSession(pool), b = NewSession(pool);
    ASSERT_EQ(&a->pool(), &b->pool());
    for (int round = 0; round < 3; ++round) {
      a->Reset();
      b->Reset();
      Trace together_a, together_b;
      std::thread ta([&] { together_a = Drive(*a, prompt_a, kSteps); });
      std::thread tb([&] { together_b = Drive(*b, prompt_b, kSteps); });
      ta.join();
      tb.join();
      EXPECT_TRUE(together_a == alone_a) << "session a, round " << round;
      EXPECT_TRUE(together_b == alone_b) << "session b, round " << round;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, SharedPool, ::testing::Values("models/mini-bf16", "models/mini-q8_0.gguf"),
                         [](const auto& info) { return std::string(info.index == 0 ? "bf16" : "q8_0"); });

TEST(SharedPool, SessionsOfOneThreadCountShareTheProcessPool) {
  auto model = std::shared_ptr<const Model>(Model::Load(test::FixturePath("models/mini-bf16")).value());
  SessionOptions o;
  o.context = 64;
  o.threads = 5;  // a count no other test of this binary keeps alive
  const int before = ThreadPool::LivePools();
  {
    auto a = Session::Create(model, o).value();
    auto b = Session::Create(model, o).value();
    EXPECT_EQ(&a->pool(), &b->pool());
    EXPECT_EQ(a->threads(), 5);
    EXPECT_EQ(ThreadPool::LivePools(), before + 1);
    o.threads = 4;
    auto c = Session::Create(model, o).value();
    EXPECT_NE(&c->pool(), &a->pool());  // another count: other bits, another pool
    // An explicit pool must agree with an explicit thread count.
    o.pool = SharedThreadPool(5);
    EXPECT_EQ(&*o.pool, &a->pool());
    EXPECT_EQ(Session::Create(model, o).status().code(), ErrorCode::kInvalidArgument);
    o.pool.reset();
  }
  EXPECT_EQ(ThreadPool::LivePools(), before);  // the last holder joined the pool's threads
}

}  // namespace
}  // namespace fgemma
