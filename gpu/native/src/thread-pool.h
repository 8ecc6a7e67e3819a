// A fixed pool of worker threads that run one parallel loop at a time (the caller's thread takes
// part). Workers spin briefly before they sleep, so back-to-back kernels of a forward pass do not
// pay a wake-up each; an idle pool sleeps on a condition variable and costs no CPU.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace triad {

class ThreadPool {
 public:
  static ThreadPool& instance();

  /** Threads that run a loop, the caller's included (>= 1). */
  int threads() const { return threads_; }
  /** Sets the number of threads (the caller's included); stops and starts workers to match. */
  void set_threads(int n);

  /**
   * Runs `body(task)` for every task in [0, tasks), spread over the pool; returns when all are
   * done. A loop started from inside a loop runs serially on the calling thread, and so does a
   * loop started by a second thread while another thread's loop holds the pool (two JavaScript
   * threads, as the data-parallel SFT workers): the tasks are the same either way, so are the
   * results.
   */
  void parallel_for(int64_t tasks, const std::function<void(int64_t)>& body);

 private:
  ThreadPool();
  ~ThreadPool();
  void stop_workers();
  void worker_main(int id);
  void run_tasks(const std::function<void(int64_t)>* body, int64_t tasks);

  int threads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  // held by the thread whose loop runs on the pool, from setting it up to its last task
  std::mutex loop_mu_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
  // the loop in flight
  const std::function<void(int64_t)>* body_ = nullptr;
  int64_t tasks_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<int64_t> done_{0};
  std::atomic<int> active_workers_{0};
};

/** Runs `body(begin, end)` over [0, n) split in about `threads` contiguous chunks of at least `grain`. */
void parallel_range(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

}  // namespace triad
