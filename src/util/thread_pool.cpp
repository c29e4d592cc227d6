#include "util/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FGEMMA_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__) || defined(__arm__)
#define FGEMMA_CPU_RELAX() asm volatile("yield" ::: "memory")
#else
#define FGEMMA_CPU_RELAX() ((void)0)
#endif

namespace fgemma {
namespace {
// A few tens of microseconds of spinning before sleeping: covers the gap between consecutive loops
// of one token without burning a core that another process (or the caller's serial work) needs.
constexpr int kSpinIterations = 2000;
}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  const int workers = std::max(1, num_threads) - 1;
  workers_.reserve(static_cast<size_t>(workers));
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this, i] { WorkerLoop(i + 1); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

int ThreadPool::DefaultThreads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(hw == 0 ? 1u : hw, 1u, 16u));
}

void ThreadPool::DrainTasks(int thread_index) {
  for (;;) {
    const size_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= job_.num_tasks) break;
    job_.call(job_.ctx, task, thread_index);
  }
}

void ThreadPool::Dispatch(const Job& job) {
  if (job.num_tasks == 0) return;
  if (workers_.empty() || job.num_tasks == 1) {
    for (size_t t = 0; t < job.num_tasks; ++t) job.call(job.ctx, t, 0);
    return;
  }
  job_ = job;
  next_task_.store(0, std::memory_order_relaxed);
  busy_workers_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  DrainTasks(0);
  // Wait for workers to finish their last task (they may still be running one).
  int spins = 0;
  for (;;) {
    const int busy = busy_workers_.load(std::memory_order_acquire);
    if (busy == 0) break;
    if (++spins < kSpinIterations) {
      FGEMMA_CPU_RELAX();
    } else {
      busy_workers_.wait(busy, std::memory_order_acquire);
    }
  }
}

void ThreadPool::WorkerLoop(int thread_index) {
  // Generation at construction is 0; reading it here instead would miss a job dispatched before
  // this thread got scheduled.
  uint32_t seen = 0;
  for (;;) {
    int spins = 0;
    uint32_t now;
    while ((now = generation_.load(std::memory_order_acquire)) == seen) {
      if (++spins < kSpinIterations) {
        FGEMMA_CPU_RELAX();
      } else {
        generation_.wait(seen, std::memory_order_acquire);
      }
    }
    seen = now;
    if (stop_.load(std::memory_order_acquire)) return;
    DrainTasks(thread_index);
    if (busy_workers_.fetch_sub(1, std::memory_order_acq_rel) == 1) busy_workers_.notify_one();
  }
}

}  // namespace fgemma
