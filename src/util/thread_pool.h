// A fixed pool of worker threads for data-parallel loops (matrix rows, attention heads).
//
// Decode issues ~100 parallel loops per token, so dispatch must cost microseconds: workers spin
// briefly on a generation counter before sleeping, and jobs are passed as a non-owning function
// reference, so Run() never allocates. Sleeping is a condition variable with a timeout, and a wake-up
// is sent only when someone sleeps; a timed re-check bounds the cost of any missed wake-up (1 ms for
// the caller waiting on a job; 100 ms for idle workers, whose missed wake-up costs no progress
// because the caller claims tasks itself).
//
// The caller never waits for a worker that has not started: tasks are claimed from a counter tagged
// with the job's generation, the caller claims them too, and it waits only for tasks in flight. On
// a busy machine (a phone running other apps, a CI box) a worker that wakes late simply finds no
// work left, instead of stalling every loop by a scheduler time slice. A late worker must not claim
// a task of a job that has finished: Dispatch closes the counter before publishing the next job's
// task count (see there).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace fgemma {

class ThreadPool {
 public:
  // `num_threads` counts the calling thread: 1 means no workers, everything runs inline.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(task, thread) for every task in [0, num_tasks), spread over the pool; returns when all
  // are done. `thread` is in [0, num_threads()) and lets callers use per-thread scratch.
  template <typename Fn>
  void Run(size_t num_tasks, Fn&& fn) {
    using F = std::remove_reference_t<Fn>;
    Job job{[](void* ctx, size_t task, int thread) { (*static_cast<F*>(ctx))(task, thread); },
            const_cast<void*>(static_cast<const void*>(&fn)), num_tasks};
    Dispatch(job);
  }

  // Default thread count: hardware concurrency, capped to keep small boards responsive.
  static int DefaultThreads();

 private:
  struct Job {
    void (*call)(void* ctx, size_t task, int thread);
    void* ctx;
    size_t num_tasks;
  };

  void Dispatch(const Job& job);
  void WorkerLoop(int thread_index);
  // Claims and runs tasks of job generation `gen` until none is left (or a newer job started).
  void RunTasks(uint32_t gen, int thread_index);

  std::vector<std::thread> workers_;
  Job job_{};                                // valid while its generation's tasks are claimable
  std::atomic<uint64_t> counter_{0};         // generation << 32 | next task index
  std::atomic<uint32_t> num_tasks_{0};
  std::atomic<uint32_t> generation_{0};      // wakes workers
  std::atomic<uint32_t> remaining_{0};       // tasks of the current job not yet finished
  std::atomic<bool> stop_{false};
  // Sleeping workers (new job) and a sleeping caller (job done) wait on these; sleepers_ counts
  // both, so the hot path skips the mutex while everyone spins.
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::atomic<int> sleepers_{0};
  void WakeSleepers(std::condition_variable& cv);
};

}  // namespace fgemma
