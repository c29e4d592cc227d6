#include "util/thread_pool.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <map>

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
// A task index no job reaches (larger jobs run in slices): the counter of a job being set up.
constexpr uint32_t kClosed = 0xffffffffu;

// The pool whose job this thread is running tasks of (always, for a worker; during Run, for a
// caller) and its thread index there: a Run from inside a task is recognized instead of waiting
// forever for the pool it holds.
thread_local const ThreadPool* t_pool = nullptr;
thread_local int t_thread = 0;

std::atomic<int> g_live_pools{0};
}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  const int workers = std::max(1, num_threads) - 1;
  workers_.reserve(static_cast<size_t>(workers));
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this, i] { WorkerLoop(i + 1); });
  g_live_pools.fetch_add(1, std::memory_order_relaxed);
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  {
    std::lock_guard<std::mutex> lock(mu_);
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
  g_live_pools.fetch_sub(1, std::memory_order_relaxed);
}

int ThreadPool::LivePools() { return g_live_pools.load(std::memory_order_relaxed); }

std::shared_ptr<ThreadPool> SharedThreadPool(int num_threads) {
  const int threads = num_threads > 0 ? num_threads : ThreadPool::DefaultThreads();
  // Weak references: the registry never keeps a pool (and its threads) alive by itself.
  static std::mutex mu;
  static std::map<int, std::weak_ptr<ThreadPool>> pools;
  std::lock_guard<std::mutex> lock(mu);
  std::weak_ptr<ThreadPool>& slot = pools[threads];
  if (std::shared_ptr<ThreadPool> pool = slot.lock()) return pool;
  auto pool = std::make_shared<ThreadPool>(threads);
  slot = pool;
  return pool;
}

// The state change is published (seq_cst) before sleepers_ is read, and a sleeper counts itself
// (seq_cst) before re-checking the state under the mutex: either the sleeper sees the change or we
// see the sleeper. Taking the mutex before notifying closes the gap between its check and its wait.
void ThreadPool::WakeSleepers(std::condition_variable& cv) {
  if (sleepers_.load(std::memory_order_seq_cst) == 0) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
  }
  cv.notify_all();
}

int ThreadPool::DefaultThreads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(hw == 0 ? 1u : hw, 1u, 16u));
}

void ThreadPool::RunTasks(uint32_t gen, int thread_index) {
  for (;;) {
    uint64_t v = counter_.load(std::memory_order_acquire);
    uint32_t task;
    for (;;) {
      if (static_cast<uint32_t>(v >> 32) != gen) return;  // a newer job: this one is finished
      task = static_cast<uint32_t>(v);
      if (task >= num_tasks_.load(std::memory_order_acquire)) return;
      if (counter_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel, std::memory_order_acquire)) break;
    }
    // The job cannot change while one of its tasks is unfinished, so job_ is stable here.
    job_.call(job_.ctx, task, thread_index);
    if (remaining_.fetch_sub(1, std::memory_order_seq_cst) == 1) WakeSleepers(done_cv_);
  }
}

void ThreadPool::Dispatch(const Job& job) {
  if (t_pool == this) {
    assert(false && "ThreadPool::Run called from a task of the same pool");
    for (size_t t = 0; t < job.num_tasks; ++t) job.call(job.ctx, t, t_thread);
    return;
  }
  // Inline jobs touch no state of the pool: concurrent callers need not wait for each other.
  if (workers_.empty() || job.num_tasks <= 1) {
    for (size_t t = 0; t < job.num_tasks; ++t) job.call(job.ctx, t, 0);
    return;
  }
  // One job at a time: the counter, job_ and remaining_ describe a single job.
  std::lock_guard<std::mutex> lock(run_mu_);
  const ThreadPool* outer_pool = t_pool;  // a task of another pool may call this one
  const int outer_thread = t_thread;
  t_pool = this;
  t_thread = 0;
  DispatchLocked(job);
  t_pool = outer_pool;
  t_thread = outer_thread;
}

void ThreadPool::DispatchLocked(const Job& job) {
  if (job.num_tasks == 0) return;
  if (workers_.empty() || job.num_tasks == 1) {
    for (size_t t = 0; t < job.num_tasks; ++t) job.call(job.ctx, t, 0);
    return;
  }
  if (job.num_tasks >= kClosed) {  // the counter holds 32-bit task indices: run in slices
    struct Slice {
      const Job* whole;
      size_t first;
    };
    for (size_t first = 0, count = 0; first < job.num_tasks; first += count) {
      count = std::min<size_t>(kClosed - 1, job.num_tasks - first);  // no overflow for 32-bit size_t
      Slice slice{&job, first};
      DispatchLocked(Job{[](void* ctx, size_t task, int thread) {
                           const Slice& s = *static_cast<const Slice*>(ctx);
                           s.whole->call(s.whole->ctx, s.first + task, thread);
                         },
                         &slice, count});
    }
    return;
  }
  const uint32_t gen = generation_.load(std::memory_order_relaxed) + 1;
  // Close the counter under the new generation first. A worker late from the previous job may hold
  // that job's exhausted counter value; if it read the new (larger) task count while the counter
  // still had that value, its claim would succeed and run a task of a finished job (once the cause
  // of a hang under qemu-arm: the extra claim's decrement left `remaining_` wrapped). With the
  // counter closed first, anyone who sees the new count fails its claim: a compare-exchange reads
  // the newest counter, and the release store of the count orders the closing before it.
  counter_.store(static_cast<uint64_t>(gen) << 32 | kClosed, std::memory_order_relaxed);
  job_ = job;
  remaining_.store(static_cast<uint32_t>(job.num_tasks), std::memory_order_relaxed);
  num_tasks_.store(static_cast<uint32_t>(job.num_tasks), std::memory_order_release);
  counter_.store(static_cast<uint64_t>(gen) << 32, std::memory_order_release);
  generation_.store(gen, std::memory_order_seq_cst);
  WakeSleepers(work_cv_);
  RunTasks(gen, 0);
  // Only tasks already claimed by a worker can be outstanding now.
  int spins = 0;
  while (remaining_.load(std::memory_order_acquire) != 0) {
    if (++spins < kSpinIterations) {
      FGEMMA_CPU_RELAX();
      continue;
    }
    std::unique_lock<std::mutex> lock(mu_);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    done_cv_.wait_for(lock, std::chrono::milliseconds(1),
                      [&] { return remaining_.load(std::memory_order_seq_cst) == 0; });
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
  }
}

void ThreadPool::WorkerLoop(int thread_index) {
  t_pool = this;
  t_thread = thread_index;
  // Generation at construction is 0; reading it here instead would miss a job dispatched before
  // this thread got scheduled.
  uint32_t seen = 0;
  for (;;) {
    int spins = 0;
    uint32_t now;
    while ((now = generation_.load(std::memory_order_acquire)) == seen) {
      if (++spins < kSpinIterations) {
        FGEMMA_CPU_RELAX();
        continue;
      }
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      // A missed wake-up here costs no progress (the caller claims every task itself), so idle
      // workers re-check only every 100 ms.
      work_cv_.wait_for(lock, std::chrono::milliseconds(100),
                        [&] { return generation_.load(std::memory_order_seq_cst) != seen; });
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    }
    seen = now;
    if (stop_.load(std::memory_order_acquire)) return;
    RunTasks(now, thread_index);
  }
}

}  // namespace fgemma
