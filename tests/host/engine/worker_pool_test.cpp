// The scheduler's sampling pool: every index runs exactly once per run, runs follow each other
// without mixing, and a pool without helpers runs everything on the caller.
#include "engine/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace hostlm::engine {
namespace {

TEST(WorkerPool, EveryIndexRunsOncePerRun) {
  for (size_t helpers : {0u, 1u, 3u, 7u}) {
    WorkerPool pool(helpers);
    std::vector<std::atomic<int>> hits(64);
    for (int round = 0; round < 500; ++round) {
      const size_t n = static_cast<size_t>(round % 65);
      for (auto& h : hits) h.store(0);
      pool.run(n, [&](size_t i) { hits[i].fetch_add(1); });
      for (size_t i = 0; i < hits.size(); ++i)
        ASSERT_EQ(hits[i].load(), i < n ? 1 : 0) << "helpers " << helpers << ", round " << round;
    }
  }
}

TEST(WorkerPool, HelpersShareTheWork) {
  // Each job waits (up to 10 s) until a second thread has taken one: passes only when a
  // helper really runs jobs of the same run, however loaded the machine is.
  WorkerPool pool(3);
  std::mutex mutex;
  std::condition_variable changed;
  std::set<std::thread::id> threads;
  pool.run(16, [&](size_t) {
    std::unique_lock<std::mutex> lock(mutex);
    threads.insert(std::this_thread::get_id());
    changed.notify_all();
    changed.wait_for(lock, std::chrono::seconds(10), [&] { return threads.size() >= 2; });
  });
  EXPECT_GE(threads.size(), 2u) << "no helper took a job";
}

}  // namespace
}  // namespace hostlm::engine
