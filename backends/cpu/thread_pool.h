// A fixed set of worker threads that run one parallel loop at a time; a loop allocates
// nothing. Between loops a thread first watches for the next one (or for the others to
// finish) for up to kSpinMicros, then sleeps on a condition variable, so an idle pool costs
// nothing. The watch is for decode: a step runs hundreds of loops of tens of microseconds
// each, and waking a sleeping thread (a futex call and, in a virtual machine, an interrupt
// to another virtual CPU) took a large share of each.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace hostlm::cpu {

// A non-owning reference to a callable (void(int64_t, int64_t)). Unlike std::function it
// never allocates, so a parallel loop over a capturing lambda costs no heap traffic.
class RangeFn {
 public:
  template <typename F>
  RangeFn(F& f)  // NOLINT: implicit on purpose, the callable outlives the loop
      : object_(static_cast<void*>(&f)),
        call_([](void* o, int64_t b, int64_t e) { (*static_cast<F*>(o))(b, e); }) {}
  void operator()(int64_t begin, int64_t end) const { call_(object_, begin, end); }

 private:
  void* object_;
  void (*call_)(void*, int64_t, int64_t);
};

class ThreadPool {
 public:
  static constexpr int kSpinMicros = 50;

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

  // Returns once ready() holds or kSpinMicros have passed; says which.
  template <typename Ready>
  static bool spin_until(Ready ready);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const RangeFn* job_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_piece_ = 0;
  std::atomic<int64_t> next_piece_{0};
  int64_t n_pieces_ = 0;
  // Written under mutex_; atomic so that the watch can read them without it.
  std::atomic<int> finished_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace hostlm::cpu
