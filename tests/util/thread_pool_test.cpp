// The thread pool: every task of a job runs once, on a thread index in range, and never after Run
// returns, also when several threads call Run at once (sessions sharing the process's pool). The pool dispatches ~100 jobs per decoded token, so the stress test below alternates
// small and large jobs as fast as it can: that is where a worker late from one job meets the next.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <string>
#include <thread>
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

// Several threads calling Run on one pool at once, as the sessions of a server do on the process's
// pool: each job must still run each of its tasks exactly once, on a thread index in range, and
// none after its Run returned. Returns a description of the first fault, or "".
std::string ConcurrentCallers(int threads, int callers, int jobs) {
  std::mutex mu;
  std::string fault;
  auto report = [&](const std::string& what) {
    std::lock_guard lock(mu);
    if (fault.empty()) fault = what;
  };
  {
    ThreadPool pool(threads);
    std::vector<std::thread> running;
    for (int c = 0; c < callers; ++c)
      running.emplace_back([&, c] {
        std::array<std::atomic<int>, 64> hits{};
        std::atomic<bool> returned{false};
        std::atomic<int> late{0}, bad_thread{0};
        for (int job = 0; job < jobs; ++job) {
          const size_t n = (job + c) % 2 ? 2 : 37 + static_cast<size_t>(c);  // small and large jobs interleave
          for (auto& h : hits) h.store(0, std::memory_order_relaxed);
          returned.store(false);
          pool.Run(n, [&](size_t task, int thread) {
            if (returned.load()) late.fetch_add(1);
            if (thread < 0 || thread >= pool.num_threads()) bad_thread.fetch_add(1);
            hits[task].fetch_add(1, std::memory_order_relaxed);
          });
          returned.store(true);
          for (size_t t = 0; t < hits.size(); ++t) {
            if (hits[t].load() != (t < n ? 1 : 0))
              return report("caller " + std::to_string(c) + ", job " + std::to_string(job) + ": task " +
                            std::to_string(t) + " ran " + std::to_string(hits[t].load()) + " times");
          }
        }
        if (late.load() || bad_thread.load())
          report("caller " + std::to_string(c) + ": " + std::to_string(late.load()) + " tasks ran after Run, " +
                 std::to_string(bad_thread.load()) + " on a thread index out of range");
      });
    for (auto& t : running) t.join();
  }
  return fault;
}

TEST(ThreadPool, ConcurrentCallersEachGetTheirOwnJobDone) {
  for (int threads : {2, 3, 8}) {
    for (int callers : {2, 3}) {
      auto result = std::async(std::launch::async, ConcurrentCallers, threads, callers, 10000);
      if (result.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
        ADD_FAILURE() << "ThreadPool::Run hung with " << threads << " threads and " << callers << " callers";
        std::fflush(stdout);
        std::_Exit(1);  // the stuck pool cannot be joined or destroyed
      }
      EXPECT_EQ(result.get(), "") << threads << " threads, " << callers << " callers";
    }
  }
}

TEST(ThreadPool, SharedPoolIsOnePerThreadCount) {
  const int before = ThreadPool::LivePools();
  {
    auto a = SharedThreadPool(3), b = SharedThreadPool(3), c = SharedThreadPool(2);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    EXPECT_EQ(a->num_threads(), 3);
    EXPECT_EQ(ThreadPool::LivePools(), before + 2);
  }
  EXPECT_EQ(ThreadPool::LivePools(), before);  // released by the last holder, threads joined
  EXPECT_EQ(SharedThreadPool(0)->num_threads(), ThreadPool::DefaultThreads());
}

#ifdef NDEBUG
// A Run from inside a task of the same pool would wait for itself; release builds run it inline
// (debug builds assert: it is a programming error).
TEST(ThreadPool, NestedRunRunsInlineInsteadOfHanging) {
  ThreadPool pool(3);
  std::atomic<int> inner{0};
  auto result = std::async(std::launch::async, [&] {
    pool.Run(6, [&](size_t, int) { pool.Run(4, [&](size_t, int) { inner.fetch_add(1); }); });
  });
  if (result.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    ADD_FAILURE() << "a nested ThreadPool::Run hung";
    std::fflush(stdout);
    std::_Exit(1);
  }
  EXPECT_EQ(inner.load(), 24);
}
#endif

}  // namespace
}  // namespace fgemma
