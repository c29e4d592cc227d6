// The server's CallerPool: its callers (each a catalog and a work session) compute on one thread
// pool, not one per session.
#include <gtest/gtest.h>

#include "runtime/engine.h"
#include "server/caller_pool.h"
#include "test_support.h"

namespace fgemma::server {
namespace {

TEST(CallerPool, CallersShareOneThreadPool) {
  auto engine = Engine::Load(test::FixturePath("models/mini-bf16"), LoadOptions{}).value();
  EngineConfig o;
  o.threads = 6;  // a count no other test of this binary keeps alive
  o.context = 256;
  const int before = ThreadPool::LivePools();
  auto pool = CallerPool::Create(*engine, o, 3).value();
  EXPECT_EQ(ThreadPool::LivePools(), before + 1);
  std::vector<std::unique_ptr<CallerPool::Lease>> leases;
  for (uint64_t key = 1; key <= 3; ++key) leases.push_back(pool->Acquire(key, std::chrono::milliseconds(0)));
  for (const auto& lease : leases) {
    ASSERT_NE(lease, nullptr);
    EXPECT_EQ(&lease->caller().pool(), &leases[0]->caller().pool());
  }
  EXPECT_NE(leases[0]->index, leases[1]->index);
  EXPECT_EQ(leases[0]->caller().pool().num_threads(), 6);
  leases.clear();
  pool.reset();
  EXPECT_EQ(ThreadPool::LivePools(), before);
}

}  // namespace
}  // namespace fgemma::server
