// ModelStore::pull and ::push against an Ollama-compatible registry (OCI distribution
// API). Downloads land in blobs/sha256-<hex>-partial, are hashed as they arrive, resume with
// a Range request after an interruption (in the same pull, which retries, or the next one),
// and become blobs only with the right digest.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>

#include "digest.h"
#include "fs_util.h"
#include "hostlm/error.h"
#include "http_client.h"
#include "registry_session.h"
#include "store_impl.h"

namespace hostlm::ollama {
namespace fs = std::filesystem;
namespace {

std::string short_digest(const std::string& digest) { return digest.substr(7, 12); }

std::string response_problem(const HttpResponse& r) {
  // Ollama's words for a registry that still refuses after the token handshake.
  std::string text = (r.status == 401 ? "unauthorized: access denied (HTTP " : "HTTP ") +
                     std::to_string(r.status) + (r.status == 401 ? ")" : "");
  try {
    // Registries answer {"errors":[{"code","message"}]}; Ollama's own {"error": "..."}.
    const auto j = nlohmann::json::parse(r.body);
    if (j.contains("errors") && j["errors"].is_array() && !j["errors"].empty())
      return text + ": " + j["errors"][0].value("message", j["errors"][0].value("code", ""));
    if (j.contains("error") && j["error"].is_string())
      return text + ": " + j["error"].get<std::string>();
  } catch (const nlohmann::json::exception&) {
  }
  return r.body.empty() ? text : text + ": " + r.body.substr(0, 200);
}

// An open partial download, locked so that two pulls of one blob take turns.
class PartialFile {
 public:
  explicit PartialFile(const fs::path& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error("cannot open " + path.string() + ": " + std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~PartialFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;

  // Hashes what is already there and returns its size.
  uint64_t resume(Sha256& hash) {
    std::vector<char> buf(4 << 20);
    uint64_t n = 0;
    ::lseek(fd_, 0, SEEK_SET);
    for (;;) {
      const ssize_t r = ::read(fd_, buf.data(), buf.size());
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) throw Error("cannot read " + path_.string() + ": " + std::strerror(errno));
      if (r == 0) break;
      hash.update(buf.data(), static_cast<size_t>(r));
      n += static_cast<uint64_t>(r);
    }
    return n;
  }
  void truncate() {
    if (::ftruncate(fd_, 0) != 0) throw Error("cannot truncate " + path_.string());
    ::lseek(fd_, 0, SEEK_SET);
  }
  bool append(const char* data, size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(fd_, data, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      data += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }
  void sync() { ::fsync(fd_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  int fd_ = -1;
};

// Failed attempts in a row (no byte gained) before a blob download gives up, and the
// pause before the first retry (doubled each time): a dropped connection or a registry
// restart costs seconds, not the whole pull.
constexpr int kMaxFailures = 5;
constexpr auto kFirstBackoff = std::chrono::milliseconds(250);

bool worth_retrying(long status) { return status == 429 || status / 100 == 5; }

// Brings `partial` up to the whole blob: what it holds is hashed first, the rest is asked
// for with a Range request, and a connection that drops is asked again from where it
// stopped. Returns the hex SHA-256 of the whole file. Throws when the registry refuses or
// keeps failing; the partial file stays for the next pull.
std::string download_blob(RegistrySession& session, const Layer& layer, PartialFile& partial,
                          const ProgressFn& progress) {
  const std::string status = "pulling " + short_digest(layer.digest);
  auto hash = std::make_unique<Sha256>();
  uint64_t have = partial.resume(*hash);
  auto restart = [&] {  // the partial file is not a prefix of this blob after all
    partial.truncate();
    hash = std::make_unique<Sha256>();
    have = 0;
  };
  if (have > layer.size) restart();
  progress({status, layer.digest, layer.size, have});
  int failures = 0;
  auto backoff = kFirstBackoff;
  while (have < layer.size) {
    const uint64_t before = have;
    HttpRequest get;
    get.url = session.repository_url() + "/blobs/" + layer.digest;
    if (have > 0) get.headers.push_back("Range: bytes=" + std::to_string(have) + "-");
    bool first = true, write_failed = false;
    get.on_data = [&](long http_status, const char* data, size_t n) {
      // A registry that ignores Range sends the whole blob (200): start from zero.
      if (first && http_status == 200 && have > 0) restart();
      first = false;
      if (!partial.append(data, n)) {
        write_failed = true;
        return false;
      }
      hash->update(data, n);
      have += n;
      progress({status, layer.digest, layer.size, have});
      return true;
    };
    std::string problem;
    HttpResponse r;
    try {
      r = session.send(get);
    } catch (const TransportError& e) {
      problem = e.what();  // the transfer broke off: try again from where it stopped
    }
    if (write_failed) throw Error("cannot write " + partial.path().string());
    if (!problem.empty()) {
      // retried below
    } else if (r.status == 404) {
      throw not_found("pull " + short_digest(layer.digest) + ": blob not found in the registry");
    } else if (r.status == 416) {  // our offset is past what it has: the partial file is stale
      restart();
      problem = response_problem(r);
    } else if (worth_retrying(r.status)) {
      problem = response_problem(r);
    } else if (r.status / 100 != 2) {
      throw Error("pull " + short_digest(layer.digest) + ": " + response_problem(r));
    } else if (have < layer.size) {
      problem = "the registry sent " + std::to_string(have) + " of " + std::to_string(layer.size) +
                " bytes";
    }
    partial.sync();
    if (problem.empty()) break;
    failures = have > before ? 1 : failures + 1;
    if (have > before) backoff = kFirstBackoff;
    if (failures >= kMaxFailures)
      throw Error(problem + " (" + std::to_string(have) + " of " + std::to_string(layer.size) +
                  " bytes kept; pull again to resume)");
    std::this_thread::sleep_for(backoff);
    backoff *= 2;
  }
  return hash->hex();
}

}  // namespace

StoredModel ModelStore::pull(std::string_view name_text, const ProgressFn& progress_fn,
                             bool insecure) {
  const ProgressFn progress = progress_fn ? progress_fn : [](const Progress&) {};
  const ModelName name = ModelName::parse(name_text);
  RegistrySession session(name, insecure);
  impl_->ensure_layout();
  progress({"pulling manifest", "", 0, 0});
  HttpRequest get_manifest;
  get_manifest.url = session.repository_url() + "/manifests/" + name.tag;
  get_manifest.headers = {std::string("Accept: ") + media::kManifest};
  const HttpResponse mr = session.send(get_manifest);
  if (mr.status == 404) throw not_found("pull model manifest: file does not exist");
  if (mr.status != 200) throw Error("pull model manifest: " + response_problem(mr));
  const Manifest manifest = Manifest::parse(mr.body, get_manifest.url);

  auto shared = std::make_unique<FileLock>(impl_->lock_path(), false);
  std::vector<Layer> all = manifest.layers;
  all.push_back(manifest.config);
  std::set<std::string> seen;
  for (const Layer& layer : all) {
    if (!seen.insert(layer.digest).second) continue;
    const std::string status = "pulling " + short_digest(layer.digest);
    if (has_blob(layer.digest)) {
      progress({status, layer.digest, layer.size, layer.size});
      continue;
    }
    PartialFile partial(impl_->blobs_dir(impl_->root) /
                        (blob_file_name(layer.digest) + "-partial"));
    if (has_blob(layer.digest)) {  // another pull finished it while we waited for the lock
      progress({status, layer.digest, layer.size, layer.size});
      continue;
    }
    const std::string got = "sha256:" + download_blob(session, layer, partial, progress);
    progress({"verifying sha256 digest", layer.digest, 0, 0});
    if (got != layer.digest) {
      std::error_code ec;
      fs::remove(partial.path(), ec);
      throw Error("digest mismatch, file must be downloaded again: want " + layer.digest +
                  ", got " + got);
    }
    const fs::path target = impl_->own_blob(layer.digest);
    fs::rename(partial.path(), target);
    fsync_dir(target.parent_path());
  }
  progress({"writing manifest", "", 0, 0});
  const fs::path target = impl_->manifests_dir(impl_->root) / name.manifest_path();
  std::optional<Manifest> old;
  {
    FileLock commit(impl_->commit_lock_path(), true);
    std::error_code ec;
    if (fs::exists(target, ec)) {
      try {
        old = Manifest::parse(read_file(target), target.string());
      } catch (const Error&) {
      }
    }
    make_dirs(target.parent_path());
    write_file_atomic(target, mr.body);  // byte for byte: the digest stays the registry's
  }
  StoredModel result = impl_->load(impl_->root, name, target);
  shared.reset();
  if (old) {
    FileLock exclusive(impl_->lock_path(), true);
    impl_->collect_garbage(*old);
  }
  progress({"success", "", 0, 0});
  return result;
}

void ModelStore::push(std::string_view name_text, const ProgressFn& progress_fn, bool insecure) {
  const ProgressFn progress = progress_fn ? progress_fn : [](const Progress&) {};
  const ModelName name = ModelName::parse(name_text);
  RegistrySession session(name, insecure);
  progress({"retrieving manifest", "", 0, 0});
  const StoredModel model = get(name_text);
  const fs::path manifest_file =
      impl_->manifests_dir(model.store_root) / model.name.manifest_path();
  const std::string manifest_bytes = read_file(manifest_file);
  std::vector<Layer> all = model.layers;
  all.push_back(model.config_layer);
  std::set<std::string> seen;
  const std::string repo = session.repository_url();
  for (const Layer& layer : all) {
    if (!seen.insert(layer.digest).second) continue;
    const std::string status = "pushing " + short_digest(layer.digest);
    HttpRequest head;
    head.method = "HEAD";
    head.url = repo + "/blobs/" + layer.digest;
    if (session.send(head).status == 200) {
      progress({status, layer.digest, layer.size, layer.size});
      continue;
    }
    progress({"starting upload", layer.digest, layer.size, 0});
    HttpRequest start;
    start.method = "POST";
    start.url = repo + "/blobs/uploads/";
    const HttpResponse started = session.send(start);
    if (started.status != 202 || !started.headers.count("location") ||
        started.headers.at("location").empty())
      throw Error("push " + short_digest(layer.digest) + ": cannot start the upload (" +
                  response_problem(started) + ")");
    std::string location = started.headers.at("location");
    if (location.rfind("http://", 0) != 0 && location.rfind("https://", 0) != 0)
      location = url_origin(session.base_url()) + (location.front() == '/' ? "" : "/") + location;
    location += (location.find('?') == std::string::npos ? "?" : "&") + std::string("digest=") +
                layer.digest;
    const fs::path blob = model.store_root / "blobs" / blob_file_name(layer.digest);
    std::ifstream in(blob, std::ios::binary);
    if (!in) throw Error("push: blob " + layer.digest + " is missing from the store");
    uint64_t sent = 0;
    HttpRequest put;
    put.method = "PUT";
    put.url = location;
    put.headers = {"Content-Type: application/octet-stream"};
    put.upload_size = layer.size;
    put.upload = [&](char* buf, size_t max) -> size_t {
      in.read(buf, static_cast<std::streamsize>(max));
      const auto n = static_cast<size_t>(in.gcount());
      sent += n;
      progress({status, layer.digest, layer.size, sent});
      return n;
    };
    put.rewind_upload = [&] {
      in.clear();
      in.seekg(0);
      sent = 0;
    };
    const HttpResponse done = session.send(put);
    if (done.status != 201 && done.status != 200 && done.status != 204)
      throw Error("push " + short_digest(layer.digest) + ": " + response_problem(done));
  }
  progress({"pushing manifest", "", 0, 0});
  HttpRequest put;
  put.method = "PUT";
  put.url = repo + "/manifests/" + name.tag;
  put.headers = {std::string("Content-Type: ") + media::kManifest};
  put.body = manifest_bytes;
  const HttpResponse r = session.send(put);
  if (r.status / 100 != 2) throw Error("push manifest: " + response_problem(r));
  progress({"success", "", 0, 0});
}

}  // namespace hostlm::ollama
