#include "cpu/thread_pool.h"

#include <algorithm>
#include <chrono>

namespace hostlm::cpu {

ThreadPool::ThreadPool(int n_threads) {
  const int n = std::max(1, n_threads);
  for (int i = 1; i < n; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

template <typename Ready>
bool ThreadPool::spin_until(Ready ready) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
  for (;;) {
    // The clock is read once every 64 checks; a check is a load and a pause.
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    if (std::chrono::steady_clock::now() >= until) return ready();
  }
}

void ThreadPool::run_pieces() {
  for (;;) {
    const int64_t piece = next_piece_.fetch_add(1);
    if (piece >= n_pieces_) return;
    const int64_t begin = piece * job_piece_;
    const int64_t end = std::min(job_n_, begin + job_piece_);
    (*job_)(begin, end);
  }
}

void ThreadPool::worker_loop(int /*index*/) {
  uint64_t seen = 0;
  for (;;) {
    spin_until([&] {
      return stop_.load(std::memory_order_relaxed) ||
             generation_.load(std::memory_order_relaxed) != seen;
    });
    {
      // Taken even when the watch saw the new loop: the job's fields were written under it.
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    run_pieces();
    // Every worker reports every loop, so none can still be inside an old loop when the next
    // one starts. The last one wakes the caller in case it went to sleep (under the mutex,
    // so the wake-up cannot fall between the caller's check and its wait).
    if (finished_.fetch_add(1) + 1 == static_cast<int>(workers_.size())) {
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_one();
    }
  }
}

void ThreadPool::run(int64_t n, int64_t grain, RangeFn fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t max_pieces = (n + grain - 1) / grain;
  if (workers_.empty() || max_pieces == 1) {
    fn(0, n);
    return;
  }
  // A few pieces per thread balance uneven rows without much scheduling cost.
  const int64_t pieces = std::min<int64_t>(max_pieces, int64_t{size()} * 4);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    job_piece_ = (n + pieces - 1) / pieces;
    n_pieces_ = (n + job_piece_ - 1) / job_piece_;
    next_piece_.store(0);
    finished_ = 0;
    ++generation_;
  }
  wake_.notify_all();  // no system call when every worker is still watching
  run_pieces();
  const auto all_done = [&] { return finished_ == static_cast<int>(workers_.size()); };
  if (!spin_until(all_done)) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, all_done);
  }
  job_ = nullptr;
}

}  // namespace hostlm::cpu
