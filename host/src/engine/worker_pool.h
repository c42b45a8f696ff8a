// A few threads that run one indexed job at a time over [0, n), for the scheduler's sampling
// step: each decoding request draws its token on its own thread, since with many streams the
// samplers (sorting a 248K-entry vocabulary, grammar masks) would otherwise run one after
// another while the accelerator waits. Threads are made once; a run allocates nothing.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hostlm::engine {

class WorkerPool {
 public:
  // `threads` helpers besides the caller (0: run everything on the caller).
  explicit WorkerPool(size_t threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Calls job(i) once for every i in [0, n), the caller taking part; returns when all are done.
  // Jobs must not throw.
  void run(size_t n, const std::function<void(size_t)>& job);

 private:
  void work();
  void take_jobs();

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(size_t)>* job_ = nullptr;
  size_t n_ = 0;
  std::atomic<size_t> next_{0};
  size_t busy_ = 0;          // helpers inside the current run
  uint64_t generation_ = 0;  // counts runs, so a helper joins each run once
  bool stop_ = false;
};

}  // namespace hostlm::engine
