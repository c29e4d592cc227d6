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
//
// One pool serves every session of a process (SharedThreadPool), so Run may be called from several
// threads at once (a server's sessions run on different HTTP threads): a mutex held for the whole
// Run serializes the jobs, and the claim protocol above only ever sees one job at a time. Jobs of
// different callers interleave at Run granularity; each job's results are those it would give
// alone, since they depend only on its own tasks and the thread count.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
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
  // are done. `thread` is in [0, num_threads()) and lets callers use per-thread scratch; the calling
  // thread is 0 in every Run, so scratch indexed by it must belong to the caller, not be shared
  // by several callers of the pool.
  // Safe to call from several threads at once: each Run waits for the pool, then has it to itself.
  // A task must not call Run on the pool running it (it would wait for its own job to finish):
  // debug builds assert; release builds run that nested job inline on the task's thread.
  template <typename Fn>
  void Run(size_t num_tasks, Fn&& fn) {
    using F = std::remove_reference_t<Fn>;
    Job job{[](void* ctx, size_t task, int thread) { (*static_cast<F*>(ctx))(task, thread); },
            const_cast<void*>(static_cast<const void*>(&fn)), num_tasks};
    Dispatch(job);
  }

  // Default thread count: hardware concurrency, capped to keep small boards responsive.
  static int DefaultThreads();
  // Pools alive in this process (tests check that sessions share one).
  static int LivePools();

 private:
  struct Job {
    void (*call)(void* ctx, size_t task, int thread);
    void* ctx;
    size_t num_tasks;
  };

  // Serializes concurrent callers, then DispatchLocked.
  void Dispatch(const Job& job);
  void DispatchLocked(const Job& job);
  void WorkerLoop(int thread_index);
  // Claims and runs tasks of job generation `gen` until none is left (or a newer job started).
  void RunTasks(uint32_t gen, int thread_index);

  std::vector<std::thread> workers_;
  std::mutex run_mu_;                        // held by the caller for a whole Run
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

// The process's pool of `num_threads` threads (0 = ThreadPool::DefaultThreads()), shared by every
// session that is not given one: created on first use, its threads joined when the last holder
// lets go. Pools of different sizes are distinct, because the thread count decides how the forward
// pass splits its work, hence the last bits of its results.
std::shared_ptr<ThreadPool> SharedThreadPool(int num_threads);

}  // namespace fgemma
