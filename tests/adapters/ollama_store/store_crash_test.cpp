// Concurrency and crash safety of the store: creates of one name racing in threads and in
// processes, and a process SIGKILLed at each stage of create. Afterwards the store must
// read back, verify, and accept new creates; prune() removes what the dead process left.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "hostlm/ollama/modelfile.h"
#include "hostlm/ollama/store.h"
#include "store_test_util.h"

namespace hostlm::ollama {
namespace {

using namespace testing;

CreateRequest gguf_request(const fs::path& gguf, const std::string& system) {
  CreateRequest r;
  r.local_files["model.gguf"] = gguf;
  r.system = system;
  return r;
}

// Every manifest reads, every blob verifies, and no blob is unreferenced.
void expect_consistent(ModelStore& store) {
  std::vector<std::string> problems;
  const auto models = store.list(&problems);
  EXPECT_TRUE(problems.empty()) << problems.front();
  for (const auto& m : models) EXPECT_NO_THROW(store.verify(m)) << m.name.display();
  EXPECT_EQ(store.prune(std::chrono::seconds(0)), 0u);
}

TEST(StoreConcurrency, ThreadsCreatingOneNameLeaveOneValidModel) {
  ScratchDir dir("threads");
  write_gguf(dir.path() / "a.gguf", 2000, 1.0f);
  write_gguf(dir.path() / "b.gguf", 3000, 2.0f);
  ModelStore store(dir.path() / "models");
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        try {
          store.create("race",
                       gguf_request(dir.path() / (t % 2 ? "a.gguf" : "b.gguf"),
                                    "thread " + std::to_string(t) + " run " + std::to_string(i)));
        } catch (const std::exception& e) {
          ++failures;
          ADD_FAILURE() << e.what();
        }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, 0);
  const StoredModel m = store.get("race");
  EXPECT_EQ(m.system->rfind("thread ", 0), 0u);
  expect_consistent(store);
  // Exactly the last model's blobs remain (weights, system, config).
  EXPECT_EQ(blob_names(dir.path() / "models").size(), 3u);
}

TEST(StoreConcurrency, ProcessesCreatingOneNameLeaveOneValidModel) {
  ScratchDir dir("procs");
  write_gguf(dir.path() / "a.gguf", 2000, 1.0f);
  const fs::path root = dir.path() / "models";
  std::vector<pid_t> children;
  for (int p = 0; p < 3; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 0;
      try {
        ModelStore store(root);
        for (int i = 0; i < 4; ++i)
          store.create("race", gguf_request(dir.path() / "a.gguf", "process " + std::to_string(p)));
      } catch (...) {
        rc = 1;
      }
      ::_exit(rc);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  ModelStore store(root);
  EXPECT_EQ(store.get("race").system->rfind("process ", 0), 0u);
  expect_consistent(store);
}

// Runs create in a child that stops at `point`, kills it there, and returns.
void kill_create_at(const fs::path& root, const fs::path& gguf, const char* point,
                    const fs::path& flag) {
  fs::remove(flag);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setenv("HOSTLM_STORE_TEST_PAUSE", point, 1);
    ::setenv("HOSTLM_STORE_TEST_PAUSE_FILE", flag.c_str(), 1);
    try {
      ModelStore store(root);
      store.create("victim", gguf_request(gguf, std::string("new from ") + point));
    } catch (...) {
    }
    ::_exit(3);  // the pause point was never reached
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(flag) && std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      ADD_FAILURE() << "the child ended before reaching " << point;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(fs::exists(flag)) << "timeout waiting for " << point;
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

TEST(StoreCrashSafety, KilledCreateLeavesTheStoreValid) {
  ScratchDir dir("crash");
  const fs::path root = dir.path() / "models";
  write_gguf(dir.path() / "old.gguf", 1000, 1.0f);
  write_gguf(dir.path() / "new.gguf", 200000, 3.0f);  // several write() calls
  {
    ModelStore store(root);
    store.create("victim", gguf_request(dir.path() / "old.gguf", "old"));
    store.create("bystander", gguf_request(dir.path() / "old.gguf", "other"));
  }
  for (const char* point : {"blob-write", "after-weights", "before-manifest", "manifest-temp"}) {
    SCOPED_TRACE(point);
    kill_create_at(root, dir.path() / "new.gguf", point, dir.path() / "paused");
    ModelStore store(root);
    // The old model is whole and untouched; the half-made one left only loose files.
    const StoredModel victim = store.get("victim");
    EXPECT_EQ(*victim.system, "old");
    EXPECT_EQ(store.list().size(), 2u);
    for (const auto& m : store.list()) EXPECT_NO_THROW(store.verify(m));
    EXPECT_GT(store.prune(std::chrono::seconds(0)), 0u);
    expect_consistent(store);
    for (const auto& name : blob_names(root)) EXPECT_EQ(name.rfind("sha256-", 0), 0u) << name;
  }
  // And the store still takes the create that was killed.
  ModelStore store(root);
  store.create("victim", gguf_request(dir.path() / "new.gguf", "new"));
  EXPECT_EQ(*store.get("victim").system, "new");
  expect_consistent(store);
}

}  // namespace
}  // namespace hostlm::ollama
