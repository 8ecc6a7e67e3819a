#include "thread-pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TRIAD_PAUSE() _mm_pause()
#else
#define TRIAD_PAUSE() std::this_thread::yield()
#endif

namespace triad {

namespace {
thread_local bool in_loop = false;
// Spins of a worker waiting for the next loop before it sleeps (about 50 us).
constexpr int kSpins = 20000;
}  // namespace

ThreadPool& ThreadPool::instance() {
  static ThreadPool pool;
  return pool;
}

ThreadPool::ThreadPool() {}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
  workers_.clear();
  stopping_ = false;
}

void ThreadPool::set_threads(int n) {
  n = std::max(1, n);
  if (n == threads_) return;
  stop_workers();
  threads_ = n;
  for (int i = 1; i < n; i++) workers_.emplace_back([this, i] { worker_main(i); });
}

void ThreadPool::run_tasks(const std::function<void(int64_t)>* body, int64_t tasks) {
  for (;;) {
    int64_t t = next_.fetch_add(1, std::memory_order_relaxed);
    if (t >= tasks) break;
    (*body)(t);
    done_.fetch_add(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::worker_main(int) {
  uint64_t seen = generation_.load();
  in_loop = true;
  for (;;) {
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen && !stopping_.load()) {
      if (++spins < kSpins) {
        TRIAD_PAUSE();
        continue;
      }
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return generation_.load() != seen || stopping_.load(); });
    }
    if (stopping_.load()) return;
    const std::function<void(int64_t)>* body;
    int64_t tasks;
    {
      // the loop's state is read under the lock that the caller sets it under
      std::lock_guard<std::mutex> lock(mu_);
      seen = generation_.load();
      body = body_;
      tasks = tasks_;
      active_workers_.fetch_add(1, std::memory_order_acq_rel);
    }
    if (body) run_tasks(body, tasks);
    active_workers_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::parallel_for(int64_t tasks, const std::function<void(int64_t)>& body) {
  if (tasks <= 0) return;
  if (threads_ == 1 || tasks == 1 || in_loop) {
    for (int64_t t = 0; t < tasks; t++) body(t);
    return;
  }
  // another thread's loop holds the pool: this one runs on its own thread (not interleaved with it)
  std::unique_lock<std::mutex> loop(loop_mu_, std::try_to_lock);
  if (!loop.owns_lock()) {
    for (int64_t t = 0; t < tasks; t++) body(t);
    return;
  }
  {
    // the previous loop's workers must have left run_tasks before its state is replaced
    std::unique_lock<std::mutex> lock(mu_);
    while (active_workers_.load(std::memory_order_acquire) != 0) {
      lock.unlock();
      TRIAD_PAUSE();
      lock.lock();
    }
    body_ = &body;
    tasks_ = tasks;
    next_.store(0);
    done_.store(0);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  wake_.notify_all();
  in_loop = true;
  run_tasks(&body, tasks);
  in_loop = false;
  while (done_.load(std::memory_order_acquire) < tasks) TRIAD_PAUSE();
  {
    // a worker that wakes late finds no loop
    std::lock_guard<std::mutex> lock(mu_);
    body_ = nullptr;
  }
}

void parallel_range(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  ThreadPool& pool = ThreadPool::instance();
  int64_t chunks = std::min<int64_t>(pool.threads(), std::max<int64_t>(1, n / std::max<int64_t>(1, grain)));
  if (chunks <= 1) {
    body(0, n);
    return;
  }
  pool.parallel_for(chunks, [&](int64_t c) {
    int64_t begin = n * c / chunks;
    int64_t end = n * (c + 1) / chunks;
    if (begin < end) body(begin, end);
  });
}

}  // namespace triad
