// Pull and push against a local OCI registry (registry_server.py, started by the test):
// a round trip, skipping blobs the other side has, resuming a cut download with a Range
// request, refusing corrupt blobs, and the `hostlm pull` command.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "hostlm/ollama/errors.h"
#include "hostlm/ollama/store.h"
#include "store_test_util.h"

namespace hostlm::ollama {
namespace {

using namespace testing;

class Registry {
 public:
  Registry(const fs::path& dir, const std::vector<std::string>& extra) : dir_(dir) {
    const fs::path script =
        source_dir() / "tests" / "adapters" / "ollama_store" / "registry_server.py";
    pid_ = ::fork();
    if (pid_ == 0) {
      std::vector<std::string> argv = {
          "python3",     script.string(),         "--root", (dir / "registry").string(),
          "--port-file", (dir / "port").string(), "--log",  (dir / "log").string()};
      argv.insert(argv.end(), extra.begin(), extra.end());
      std::vector<char*> c;
      for (auto& a : argv) c.push_back(a.data());
      c.push_back(nullptr);
      ::execvp("python3", c.data());
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!fs::exists(dir / "port") && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    port_ = slurp(dir / "port");
  }
  ~Registry() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  bool up() const { return !port_.empty(); }
  std::string name(const std::string& repo) const {
    return "http://127.0.0.1:" + port_ + "/" + repo;
  }
  std::string log() const { return slurp(dir_ / "log"); }

 private:
  fs::path dir_;
  pid_t pid_ = -1;
  std::string port_;
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

// A store holding `name` made from a GGUF of n floats.
StoredModel make_model(ModelStore& store, const fs::path& dir, const std::string& name, size_t n) {
  write_gguf(dir / "w.gguf", n, 5.0f);
  CreateRequest req;
  req.local_files["w.gguf"] = dir / "w.gguf";
  req.system = "pushed";
  return store.create(name, req);
}

TEST(Registry, PushThenPullRoundTrip) {
  ScratchDir dir("registry");
  Registry registry(dir.path(), {});
  ASSERT_TRUE(registry.up());
  ModelStore a(dir.path() / "a");
  const StoredModel made = make_model(a, dir.path(), registry.name("test/tiny:v1"), 5000);
  std::vector<std::string> statuses;
  a.push(registry.name("test/tiny:v1"), [&](const Progress& p) {
    if (statuses.empty() || statuses.back() != p.status) statuses.push_back(p.status);
  });
  EXPECT_EQ(statuses.front(), "retrieving manifest");
  EXPECT_EQ(statuses.back(), "success");
  EXPECT_NE(std::find(statuses.begin(), statuses.end(), "pushing manifest"), statuses.end());
  // A second push finds every blob there and uploads nothing.
  const std::string before = registry.log();
  a.push(registry.name("test/tiny:v1"));
  const std::string second = registry.log().substr(before.size());
  EXPECT_NE(second.find("HEAD /v2/test/tiny/blobs/sha256:"), std::string::npos) << second;
  EXPECT_EQ(second.find("POST"), std::string::npos) << second;
  EXPECT_EQ(second.find("PUT /v2/test/tiny/blobs"), std::string::npos) << second;

  ModelStore b(dir.path() / "b");
  std::vector<Progress> progress;
  const StoredModel pulled =
      b.pull(registry.name("test/tiny:v1"), [&](const Progress& p) { progress.push_back(p); });
  EXPECT_EQ(pulled.digest, made.digest);  // the same manifest bytes
  EXPECT_EQ(
      pulled.name.display(),
      "127.0.0.1:" + registry.name("").substr(17, registry.name("").size() - 18) + "/test/tiny:v1");
  EXPECT_EQ(*pulled.system, "pushed");
  b.verify(pulled);
  EXPECT_EQ(progress.front().status, "pulling manifest");
  EXPECT_EQ(progress.back().status, "success");
  EXPECT_TRUE(std::any_of(progress.begin(), progress.end(), [](const Progress& p) {
    return p.status.rfind("pulling ", 0) == 0 && p.total > 0 && p.completed == p.total;
  }));
  EXPECT_EQ(error_of([&] { b.pull(registry.name("test/none:v1")); }),
            "pull model manifest: file does not exist");
}

TEST(Registry, ResumesACutDownloadWithARangeRequest) {
  ScratchDir dir("registry-cut");
  Registry registry(dir.path(), {"--cut-after", "10000"});
  ASSERT_TRUE(registry.up());
  ModelStore a(dir.path() / "a");
  make_model(a, dir.path(), registry.name("test/big:v1"), 20000);  // 80 KB of weights
  a.push(registry.name("test/big:v1"));
  ModelStore b(dir.path() / "b");
  const std::string first = error_of([&] { b.pull(registry.name("test/big:v1")); });
  EXPECT_NE(first.find("bytes kept; pull again to resume"), std::string::npos) << first;
  bool partial = false;
  for (const auto& n : blob_names(dir.path() / "b"))
    partial |= n.size() > 8 && n.substr(n.size() - 8) == "-partial";
  EXPECT_TRUE(partial);
  const StoredModel m = b.pull(registry.name("test/big:v1"));
  b.verify(m);
  EXPECT_NE(registry.log().find(" bytes=10000-"), std::string::npos) << registry.log();
  for (const auto& n : blob_names(dir.path() / "b"))
    EXPECT_EQ(n.find("partial"), std::string::npos) << n;
}

TEST(Registry, RefusesBlobsWithTheWrongDigest) {
  ScratchDir dir("registry-bad");
  {
    Registry registry(dir.path(), {});
    ASSERT_TRUE(registry.up());
    ModelStore a(dir.path() / "a");
    make_model(a, dir.path(), registry.name("test/m:v1"), 100);
    a.push(registry.name("test/m:v1"));
  }
  fs::remove(dir.path() / "port");
  Registry corrupt(dir.path(), {"--corrupt"});
  ASSERT_TRUE(corrupt.up());
  ModelStore b(dir.path() / "b");
  const std::string e = error_of([&] { b.pull(corrupt.name("test/m:v1")); });
  EXPECT_EQ(e.rfind("digest mismatch, file must be downloaded again: want sha256:", 0), 0u) << e;
  EXPECT_TRUE(b.list().empty());
  for (const auto& n : blob_names(dir.path() / "b"))
    EXPECT_EQ(n.find("partial"), std::string::npos) << n;
}

TEST(Registry, PullCommand) {
  ScratchDir dir("registry-cli");
  Registry registry(dir.path(), {});
  ASSERT_TRUE(registry.up());
  ModelStore a(dir.path() / "a");
  make_model(a, dir.path(), registry.name("test/cli:v1"), 100);
  a.push(registry.name("test/cli:v1"));
  const char* build = std::getenv("HOSTLM_BUILD_DIR");
  const fs::path bin = build && *build
                           ? fs::path(build) / "bin" / "hostlm"
                           : fs::read_symlink("/proc/self/exe").parent_path() / "hostlm";
  const std::string cmd = "HOSTLM_MODELS='" + (dir.path() / "c").string() +
                          "' OLLAMA_MODELS=/nonexistent '" + bin.string() + "' pull " +
                          registry.name("test/cli:v1") + " 2>'" + (dir.path() / "err").string() +
                          "' && HOSTLM_MODELS='" + (dir.path() / "c").string() + "' '" +
                          bin.string() + "' list >'" + (dir.path() / "out").string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(dir.path() / "err");
  const std::string err = slurp(dir.path() / "err");
  EXPECT_EQ(err.rfind("pulling manifest\n", 0), 0u) << err;
  EXPECT_NE(err.find("verifying sha256 digest\nwriting manifest\nsuccess\n"), std::string::npos)
      << err;
  EXPECT_NE(slurp(dir.path() / "out").find("/test/cli:v1"), std::string::npos);
}

}  // namespace
}  // namespace hostlm::ollama
