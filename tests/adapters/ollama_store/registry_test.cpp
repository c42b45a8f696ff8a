// Pull and push against a local OCI registry (registry_server.py, started by the test):
// a round trip, skipping blobs the other side has, resuming a cut download with a Range
// request, refusing corrupt blobs, the Bearer-token handshake, HTTPS with a CA of the
// test's own, `hf.co/USER/REPO:QUANT` names sent to the local registry by
// HOSTLM_REGISTRY_OVERRIDE, and the `hostlm pull` command.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <sstream>
#include <thread>

#include "hostlm/ollama/errors.h"
#include "hostlm/ollama/store.h"
#include "store_test_util.h"

namespace hostlm::ollama {
namespace {

using namespace testing;

class Registry {
 public:
  Registry(const fs::path& dir, const std::vector<std::string>& extra)
      : dir_(dir), tls_(std::find(extra.begin(), extra.end(), "--tls") != extra.end()) {
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
    while (!fs::exists(dir / "port") && std::chrono::steady_clock::now() < deadline) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {  // it exited: no point in waiting
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    port_ = slurp(dir / "port");
  }
  ~Registry() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  bool up() const { return !port_.empty(); }
  std::string name(const std::string& repo) const {
    return "http://127.0.0.1:" + port_ + "/" + repo;
  }
  std::string base_url() const {
    return (tls_ ? "https" : "http") + std::string("://127.0.0.1:") + port_;
  }
  const std::string& port() const { return port_; }
  std::string log() const { return slurp(dir_ / "log"); }

 private:
  fs::path dir_;
  bool tls_ = false;
  pid_t pid_ = -1;
  std::string port_;
};

// Sets (or, with nullptr, removes) an environment variable for the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The log lines of one kind ("GET /cdn/", " auth=no") from a registry log.
std::vector<std::string> log_lines(const std::string& log, const std::string& with) {
  std::vector<std::string> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find(with) != std::string::npos) out.push_back(line);
  return out;
}

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
  const StoredModel made = make_model(a, dir.path(), registry.name("test/big:v1"), 20000);
  a.push(registry.name("test/big:v1"));  // 80 KB of weights
  const std::string weights = made.layers.front().digest;
  ModelStore b(dir.path() / "b");
  std::vector<Progress> progress;
  // The registry drops the connection after 10000 bytes; the same pull asks for the rest.
  const StoredModel m =
      b.pull(registry.name("test/big:v1"), [&](const Progress& p) { progress.push_back(p); });
  b.verify(m);
  const auto gets = log_lines(registry.log(), "GET /v2/test/big/blobs/" + weights);
  ASSERT_EQ(gets.size(), 2u) << registry.log();
  EXPECT_NE(gets[0].find(" - "), std::string::npos) << gets[0];  // no Range at first
  EXPECT_NE(gets[1].find(" bytes=10000-"), std::string::npos) << gets[1];
  EXPECT_TRUE(std::any_of(progress.begin(), progress.end(), [&](const Progress& p) {
    return p.digest == weights && p.completed == 10000;
  }));
  EXPECT_EQ(progress.back().status, "success");
  for (const auto& n : blob_names(dir.path() / "b"))
    EXPECT_EQ(n.find("partial"), std::string::npos) << n;
}

TEST(Registry, ResumesFromThePartialFileOfAnEarlierPull) {
  ScratchDir dir("registry-partial");
  Registry registry(dir.path(), {});
  ASSERT_TRUE(registry.up());
  ModelStore a(dir.path() / "a");
  const StoredModel made = make_model(a, dir.path(), registry.name("test/part:v1"), 20000);
  a.push(registry.name("test/part:v1"));
  const Layer& weights = made.layers.front();
  const fs::path partial =
      dir.path() / "b" / "blobs" / ("sha256-" + weights.digest.substr(7) + "-partial");
  // What a pull killed after 3000 bytes leaves behind.
  spit(partial, slurp(made.model_path).substr(0, 3000));
  ModelStore b(dir.path() / "b");
  const StoredModel m = b.pull(registry.name("test/part:v1"));
  b.verify(m);
  const auto gets = log_lines(registry.log(), "GET /v2/test/part/blobs/" + weights.digest);
  ASSERT_EQ(gets.size(), 1u) << registry.log();
  EXPECT_NE(gets[0].find(" bytes=3000-"), std::string::npos) << gets[0];
  EXPECT_FALSE(fs::exists(partial));
}

TEST(Registry, AStalePartialFileFailsTheDigestCheckAndIsDropped) {
  ScratchDir dir("registry-stale");
  Registry registry(dir.path(), {});
  ASSERT_TRUE(registry.up());
  ModelStore a(dir.path() / "a");
  const StoredModel made = make_model(a, dir.path(), registry.name("test/stale:v1"), 20000);
  a.push(registry.name("test/stale:v1"));
  const std::string digest = made.layers.front().digest;
  const fs::path partial = dir.path() / "b" / "blobs" / ("sha256-" + digest.substr(7) + "-partial");
  spit(partial, std::string(3000, 'x'));  // not a prefix of the blob
  ModelStore b(dir.path() / "b");
  const std::string e = error_of([&] { b.pull(registry.name("test/stale:v1")); });
  EXPECT_EQ(
      e.rfind("digest mismatch, file must be downloaded again: want " + digest + ", got sha256:",
              0),
      0u)
      << e;
  EXPECT_FALSE(fs::exists(partial));
  EXPECT_TRUE(b.list().empty());
  b.verify(b.pull(registry.name("test/stale:v1")));  // the next pull starts afresh
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
  const std::string wanted = e.substr(e.find("want ") + 5, 71);
  EXPECT_NE(e.find(", got sha256:"), std::string::npos) << e;
  EXPECT_EQ(e.find(", got " + wanted), std::string::npos) << e;
  EXPECT_TRUE(b.list().empty());
  for (const auto& n : blob_names(dir.path() / "b"))
    EXPECT_EQ(n.find("partial"), std::string::npos) << n;
}

TEST(Registry, BearerTokenHandshake) {
  ScratchDir dir("registry-auth");
  Registry registry(dir.path(), {"--auth", "--redirect-blobs"});
  ASSERT_TRUE(registry.up());
  ModelStore a(dir.path() / "a");
  make_model(a, dir.path(), registry.name("test/auth:v1"), 5000);
  // Push: a pull-scoped token for the HEADs, then a 401 asking for push, a second token.
  a.push(registry.name("test/auth:v1"));
  std::string log = registry.log();
  const auto tokens = log_lines(log, "GET /token?");
  ASSERT_EQ(tokens.size(), 2u) << log;
  EXPECT_NE(tokens[0].find("service=hostlm-test-registry&scope=repository%3Atest%2Fauth%3Apull "),
            std::string::npos)
      << tokens[0];
  EXPECT_NE(tokens[1].find("scope=repository%3Atest%2Fauth%3Apull%2Cpush "), std::string::npos)
      << tokens[1];
  EXPECT_TRUE(log_lines(log, "PUT /v2/test/auth/manifests/v1 - auth=yes").size() == 1) << log;

  ModelStore b(dir.path() / "b");
  const size_t before = log.size();
  b.verify(b.pull(registry.name("test/auth:v1")));
  log = registry.log().substr(before);
  // One token for the whole pull: the manifest is asked for twice, every blob once.
  EXPECT_EQ(log_lines(log, "GET /token?").size(), 1u) << log;
  EXPECT_EQ(log_lines(log, "GET /v2/test/auth/manifests/v1 - auth=no").size(), 1u) << log;
  EXPECT_EQ(log_lines(log, "GET /v2/test/auth/manifests/v1 - auth=yes").size(), 1u) << log;
  EXPECT_FALSE(log_lines(log, "GET /v2/test/auth/blobs/sha256:").empty()) << log;
  EXPECT_TRUE(log_lines(log, "GET /v2/test/auth/blobs/sha256:").size() ==
              log_lines(log, "/blobs/sha256:").size())
      << log;
  // The download is redirected to another host name: the token must not follow it.
  const auto cdn = log_lines(log, "GET /cdn/sha256:");
  EXPECT_EQ(cdn.size(), log_lines(log, "GET /v2/test/auth/blobs/").size()) << log;
  for (const std::string& line : cdn) EXPECT_NE(line.find(" auth=no"), std::string::npos) << line;
}

TEST(Registry, RefusesATokenRealmOnAnotherHost) {
  ScratchDir dir("registry-realm");
  Registry registry(dir.path(), {"--auth", "--realm-host", "localhost"});
  ASSERT_TRUE(registry.up());
  ModelStore b(dir.path() / "b");
  const std::string e = error_of([&] { b.pull(registry.name("test/x:v1")); });
  EXPECT_EQ(e, "registry authentication: realm host \"localhost:" + registry.port() +
                   "\" does not match original host \"127.0.0.1:" + registry.port() + "\"");
  EXPECT_TRUE(log_lines(registry.log(), "/token").empty());
}

TEST(Registry, HuggingFaceNamesOverHttpsWithOwnCertificateAuthority) {
  ScratchDir dir("registry-tls");
  Registry registry(dir.path(), {"--tls", (dir.path() / "tls").string(), "--auth"});
  ASSERT_TRUE(registry.up());
  const std::string ca = (dir.path() / "tls" / "ca.pem").string();
  const std::string override_hosts =
      "hf.co=" + registry.base_url() + ", huggingface.co=" + registry.base_url() + "/";
  ScopedEnv hosts("HOSTLM_REGISTRY_OVERRIDE", override_hosts.c_str());
  ScopedEnv curl_bundle("CURL_CA_BUNDLE", nullptr), ssl_file("SSL_CERT_FILE", nullptr),
      ssl_dir("SSL_CERT_DIR", nullptr);
  const std::string name = "hf.co/test/Tiny-GGUF:Q4_K_M";
  ModelStore a(dir.path() / "a");
  {
    ScopedEnv trust("HOSTLM_CA_BUNDLE", ca.c_str());
    const StoredModel made = make_model(a, dir.path(), name, 3000);
    a.push(name);
    ModelStore b(dir.path() / "b");
    const StoredModel pulled = b.pull(name);
    EXPECT_EQ(pulled.digest, made.digest);
    EXPECT_EQ(pulled.name.display(), name);
    EXPECT_TRUE(fs::is_regular_file(dir.path() / "b" / "manifests" / "hf.co" / "test" /
                                    "Tiny-GGUF" / "Q4_K_M"));
    EXPECT_FALSE(log_lines(registry.log(), "GET /v2/test/Tiny-GGUF/manifests/Q4_K_M").empty());
    // huggingface.co is another host to Ollama, so another folder of the store.
    const StoredModel long_name = b.pull("huggingface.co/test/Tiny-GGUF:Q4_K_M");
    EXPECT_EQ(long_name.digest, made.digest);
    EXPECT_TRUE(fs::is_regular_file(dir.path() / "b" / "manifests" / "huggingface.co" / "test" /
                                    "Tiny-GGUF" / "Q4_K_M"));
  }
  // Without the test's CA the certificate is refused; --insecure skips the check.
  ModelStore c(dir.path() / "c");
  const std::string e = error_of([&] { c.pull(name); });
  EXPECT_NE(e.find(registry.base_url() + "/v2/test/Tiny-GGUF/manifests/Q4_K_M: SSL certificate"),
            std::string::npos)
      << e;
  c.verify(c.pull(name, {}, /*insecure=*/true));
  ScopedEnv bad("HOSTLM_REGISTRY_OVERRIDE", "hf.co");
  EXPECT_EQ(error_of([&] { c.pull(name); }),
            "HOSTLM_REGISTRY_OVERRIDE: 'hf.co' is not HOST=URL with an http:// or https:// URL");
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

TEST(Registry, PullCommandWithAHuggingFaceName) {
  ScratchDir dir("registry-cli-hf");
  Registry registry(dir.path(), {"--tls", (dir.path() / "tls").string()});
  ASSERT_TRUE(registry.up());
  const std::string ca = (dir.path() / "tls" / "ca.pem").string();
  const std::string env = "HOSTLM_REGISTRY_OVERRIDE='hf.co=" + registry.base_url() +
                          "' HOSTLM_CA_BUNDLE='" + ca + "' OLLAMA_MODELS=/nonexistent ";
  {
    ScopedEnv hosts("HOSTLM_REGISTRY_OVERRIDE", ("hf.co=" + registry.base_url()).c_str());
    ScopedEnv trust("HOSTLM_CA_BUNDLE", ca.c_str());
    ModelStore a(dir.path() / "a");
    make_model(a, dir.path(), "hf.co/user/Repo-GGUF:Q8_0", 100);
    a.push("hf.co/user/Repo-GGUF:Q8_0");
  }
  const char* build = std::getenv("HOSTLM_BUILD_DIR");
  const fs::path bin = build && *build
                           ? fs::path(build) / "bin" / "hostlm"
                           : fs::read_symlink("/proc/self/exe").parent_path() / "hostlm";
  const std::string store = "HOSTLM_MODELS='" + (dir.path() / "c").string() + "' ";
  const std::string cmd = env + store + "'" + bin.string() +
                          "' pull hf.co/user/Repo-GGUF:Q8_0 2>'" + (dir.path() / "err").string() +
                          "' && " + store + "OLLAMA_MODELS=/nonexistent '" + bin.string() +
                          "' list >'" + (dir.path() / "out").string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(dir.path() / "err");
  EXPECT_NE(slurp(dir.path() / "err").find("verifying sha256 digest\nwriting manifest\nsuccess\n"),
            std::string::npos);
  EXPECT_NE(slurp(dir.path() / "out").find("\nhf.co/user/Repo-GGUF:Q8_0 "), std::string::npos)
      << slurp(dir.path() / "out");
  EXPECT_TRUE(fs::is_regular_file(dir.path() / "c" / "manifests" / "hf.co" / "user" / "Repo-GGUF" /
                                  "Q8_0"));
}

}  // namespace
}  // namespace hostlm::ollama
