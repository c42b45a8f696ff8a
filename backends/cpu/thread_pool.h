// A fixed set of worker threads that run one parallel loop at a time. Workers wait on a
// condition variable between loops, so an idle pool costs nothing; a loop allocates nothing.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hostlm::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Calls fn(begin, end) over [0, n) split into contiguous pieces of at least `grain`
  // items; the calling thread takes part. Returns when every piece is done.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_loop(int index);
  void run_pieces();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_piece_ = 0;
  std::atomic<int64_t> next_piece_{0};
  int64_t n_pieces_ = 0;
  int finished_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace hostlm::cpu
