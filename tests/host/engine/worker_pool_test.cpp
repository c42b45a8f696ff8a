// The scheduler's sampling pool: every index runs exactly once per run, runs follow each other
// without mixing, and a pool without helpers runs everything on the caller.
#include "engine/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
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
  WorkerPool pool(3);
  std::vector<std::thread::id> who(256);
  pool.run(who.size(), [&](size_t i) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    who[i] = std::this_thread::get_id();
  });
  size_t by_caller = 0;
  for (const auto& id : who) by_caller += id == std::this_thread::get_id();
  EXPECT_LT(by_caller, who.size()) << "the helpers took no job";
}

}  // namespace
}  // namespace hostlm::engine
