#include "engine/worker_pool.h"

namespace hostlm::engine {

WorkerPool::WorkerPool(size_t threads) {
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void WorkerPool::take_jobs() {
  for (size_t i = next_.fetch_add(1); i < n_; i = next_.fetch_add(1)) (*job_)(i);
}

void WorkerPool::run(size_t n, const std::function<void(size_t)>& job) {
  if (n == 0) return;
  if (threads_.empty() || n == 1) {
    for (size_t i = 0; i < n; ++i) job(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &job;
    n_ = n;
    next_.store(0);
    ++generation_;
  }
  wake_.notify_all();
  take_jobs();
  // Every job has been handed out; wait for the helpers still finishing theirs.
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return busy_ == 0 && next_.load() >= n_; });
  job_ = nullptr;
  n_ = 0;
}

void WorkerPool::work() {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || (generation_ != seen && job_ != nullptr); });
    if (stop_) return;
    seen = generation_;
    ++busy_;
    lock.unlock();
    take_jobs();
    lock.lock();
    --busy_;
    if (busy_ == 0) done_.notify_all();
  }
}

}  // namespace hostlm::engine
