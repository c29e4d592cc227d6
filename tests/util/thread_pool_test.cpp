// The thread pool: every task of a job runs once, on a thread index in range, and never after Run
// returns. The pool dispatches ~100 jobs per decoded token, so the stress test below alternates
// small and large jobs as fast as it can: that is where a worker late from one job meets the next.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <vector>

#include "util/thread_pool.h"

namespace fgemma {
namespace {

TEST(ThreadPool, RunsEveryTaskOnce) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (size_t n : {0u, 1u, 2u, 7u, 1000u}) {
      std::vector<std::atomic<int>> hits(n);
      for (int rep = 0; rep < 20; ++rep) {
        pool.Run(n, [&](size_t task, int thread) {
          ASSERT_LT(thread, pool.num_threads());
          hits[task].fetch_add(1);
        });
      }
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 20);
    }
  }
}

// A worker that was late for a small job must not claim a task of it once the next, larger job is
// being set up (it used to: the claim ran a task twice, and its extra decrement of the pending count
// could hang a later Run; seen under qemu-arm). Each Run must run each of its tasks exactly once,
// and nothing may run between two Runs.
// The stress loop of the test below; returns a description of the first fault, or "".
std::string AlternateSmallAndLargeJobs(int threads, int jobs) {
  std::atomic<long> executed{0};
  std::array<std::atomic<int>, 64> hits{};
  std::atomic<bool> between_runs{false};
  std::atomic<int> ran_between_runs{0};
  long expected = 0;
  {
    ThreadPool pool(threads);
    for (int job = 0; job < jobs; ++job) {
      const size_t n = job % 2 ? 2 : 37;  // a small job, then a larger one: the racy pair
      for (auto& h : hits) h.store(0, std::memory_order_relaxed);
      between_runs.store(false);
      pool.Run(n, [&](size_t task, int) {
        if (between_runs.load()) ran_between_runs.fetch_add(1);
        hits[task].fetch_add(1, std::memory_order_relaxed);
        executed.fetch_add(1, std::memory_order_relaxed);
      });
      between_runs.store(true);
      expected += static_cast<long>(n);
      for (size_t t = 0; t < hits.size(); ++t) {
        if (hits[t].load() != (t < n ? 1 : 0)) {
          return "job " + std::to_string(job) + ": task " + std::to_string(t) + " ran " +
                 std::to_string(hits[t].load()) + " times";
        }
      }
    }
  }  // joins the workers: any straggler has finished
  if (executed.load() != expected) {
    return std::to_string(executed.load()) + " tasks ran, " + std::to_string(expected) + " expected";
  }
  if (ran_between_runs.load() != 0) return std::to_string(ran_between_runs.load()) + " tasks ran between Runs";
  return "";
}

// A worker that was late for a small job must not claim a task of it once the next, larger job is
// being set up (it used to: the claim ran a task twice, and its extra decrement of the pending count
// hung a later Run; seen under qemu-arm, and reproduced by this test with 8 threads on 2 cores).
// More threads than cores make workers late at random points. A hang is reported as a failure
// after a generous deadline (the loop takes about 2 s under qemu-arm) instead of blocking the suite.
TEST(ThreadPool, LateWorkersNeverRunATaskOfAFinishedJob) {
  for (int threads : {2, 3, 8}) {
    auto result = std::async(std::launch::async, AlternateSmallAndLargeJobs, threads, 20000);
    if (result.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
      ADD_FAILURE() << "ThreadPool::Run hung with " << threads << " threads";
      std::fflush(stdout);
      std::_Exit(1);  // the stuck pool cannot be joined or destroyed
    }
    EXPECT_EQ(result.get(), "") << threads << " threads";
  }
}

}  // namespace
}  // namespace fgemma
