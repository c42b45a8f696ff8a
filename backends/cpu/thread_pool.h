// A fixed set of worker threads that run one parallel loop at a time. Workers wait on a
// condition variable between loops, so an idle pool costs nothing; a loop allocates nothing.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <mutex>
#include <thread>
#include <vector>

namespace hostlm::cpu {

// A non-owning reference to a callable (void(int64_t, int64_t)). Unlike std::function it
// never allocates, so a parallel loop over a capturing lambda costs no heap traffic.
class RangeFn {
 public:
  template <typename F>
  RangeFn(F& f)  // NOLINT: implicit on purpose, the callable outlives the loop
      : object_(static_cast<void*>(&f)), call_([](void* o, int64_t b, int64_t e) {
          (*static_cast<F*>(o))(b, e);
        }) {}
  void operator()(int64_t begin, int64_t end) const { call_(object_, begin, end); }

 private:
  void* object_;
  void (*call_)(void*, int64_t, int64_t);
};

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Calls fn(begin, end) over [0, n) split into contiguous pieces of at least `grain`
  // items; the calling thread takes part. Returns when every piece is done.
  template <typename F>
  void parallel_for(int64_t n, int64_t grain, F&& fn) {
    run(n, grain, RangeFn(fn));
  }

 private:
  void run(int64_t n, int64_t grain, RangeFn fn);
  void worker_loop(int index);
  void run_pieces();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const RangeFn* job_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_piece_ = 0;
  std::atomic<int64_t> next_piece_{0};
  int64_t n_pieces_ = 0;
  int finished_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace hostlm::cpu
