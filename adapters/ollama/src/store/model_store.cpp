// ModelStore: finding, listing, copying and removing models, and the blob API.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>

#include "digest.h"
#include "fs_util.h"
#include "hostlm/error.h"
#include "store_impl.h"

namespace hostlm::ollama {
namespace fs = std::filesystem;
namespace {

bool is_temp_name(const fs::path& p) {
  return p.filename().string().rfind(std::string(kTempPrefix), 0) == 0;
}

fs::path home_dir() {
  const char* home = std::getenv("HOME");
  return home && *home ? fs::path(home) : fs::path("/");
}

std::chrono::system_clock::time_point mtime_of(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return {};
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
}

}  // namespace

// ---- StoredModel / Progress -------------------------------------------------------------

std::string StoredModel::renderer() const {
  const auto it = config.find("renderer");
  return it != config.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string StoredModel::parser() const {
  const auto it = config.find("parser");
  return it != config.end() && it->is_string() ? it->get<std::string>() : "";
}

nlohmann::ordered_json StoredModel::details() const {
  auto str = [&](const char* key) {
    const auto it = config.find(key);
    return it != config.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  nlohmann::ordered_json d;
  d["parent_model"] = "";
  d["format"] = str("model_format");
  d["family"] = str("model_family");
  const auto fam = config.find("model_families");
  d["families"] = fam != config.end() && fam->is_array() ? *fam : nlohmann::ordered_json(nullptr);
  d["parameter_size"] = str("model_type");
  d["quantization_level"] = str("file_type");
  return d;
}

nlohmann::ordered_json Progress::to_json() const {
  nlohmann::ordered_json j;
  j["status"] = status;
  if (!digest.empty()) j["digest"] = digest;
  if (total) j["total"] = total;
  if (completed) j["completed"] = completed;
  return j;
}

// ---- Impl -------------------------------------------------------------------------------

fs::path ModelStore::Impl::own_blob(const std::string& digest) const {
  return blobs_dir(root) / blob_file_name(digest);
}

void ModelStore::Impl::ensure_layout() const {
  make_dirs(blobs_dir(root));
  make_dirs(manifests_dir(root));
}

std::vector<std::pair<ModelName, fs::path>> ModelStore::Impl::manifest_files(
    const fs::path& r) const {
  std::vector<std::pair<ModelName, fs::path>> out;
  const fs::path base = manifests_dir(r);
  std::error_code ec;
  if (!fs::is_directory(base, ec)) return out;
  auto dirs = [](const fs::path& d) {
    std::vector<fs::path> v;
    std::error_code e;
    for (const auto& entry : fs::directory_iterator(d, e)) v.push_back(entry.path());
    std::sort(v.begin(), v.end());
    return v;
  };
  for (const fs::path& host : dirs(base))
    for (const fs::path& ns : dirs(host))
      for (const fs::path& model : dirs(ns))
        for (const fs::path& tag : dirs(model)) {
          if (is_temp_name(tag) || !fs::is_regular_file(tag, ec)) continue;
          ModelName n;
          n.host = host.filename().string();
          n.ns = ns.filename().string();
          n.model = model.filename().string();
          n.tag = tag.filename().string();
          // Only names the grammar allows (a stray file is not a model).
          if (auto valid = ModelName::try_parse(n.full()); valid && valid->same_model(n))
            out.emplace_back(n, tag);
        }
  return out;
}

std::optional<fs::path> ModelStore::Impl::find_manifest(const fs::path& r,
                                                        const ModelName& name) const {
  const fs::path exact = manifests_dir(r) / name.manifest_path();
  std::error_code ec;
  if (fs::is_regular_file(exact, ec)) return exact;
  for (const auto& [n, p] : manifest_files(r))
    if (n.same_model(name)) return p;
  return std::nullopt;
}

StoredModel ModelStore::Impl::load(const fs::path& r, const ModelName& name,
                                   const fs::path& manifest_file) const {
  const std::string bytes = read_file(manifest_file);
  const Manifest m = Manifest::parse(bytes, manifest_file.string());
  StoredModel s;
  s.name = name;
  // The spelling on disk is the model's name.
  const fs::path rel = manifest_file.lexically_relative(manifests_dir(r));
  auto it = rel.begin();
  s.name.host = (it++)->string();
  s.name.ns = (it++)->string();
  s.name.model = (it++)->string();
  s.name.tag = (it++)->string();
  s.name.digest.clear();
  s.digest = sha256_hex(bytes);
  s.modified_at = mtime_of(manifest_file);
  s.store_root = r;
  s.read_only = r != root;
  s.config_layer = m.config;
  s.layers = m.layers;
  s.size = m.config.size;
  const fs::path blobs = blobs_dir(r);
  auto blob = [&](const Layer& l) { return blobs / blob_file_name(l.digest); };
  auto text = [&](const Layer& l) {
    try {
      return read_file(blob(l));
    } catch (const Error&) {
      throw Error("model " + name.display() + ": blob " + l.digest + " (" + l.media_type +
                  ") is missing from " + blobs.string());
    }
  };
  auto json = [&](const Layer& l) {
    try {
      return nlohmann::ordered_json::parse(text(l));
    } catch (const nlohmann::json::exception& e) {
      throw Error("model " + name.display() + ": blob " + l.digest + " is not valid JSON (" +
                  e.what() + ")");
    }
  };
  if (!m.config.digest.empty()) {
    std::error_code ec;
    if (fs::exists(blob(m.config), ec)) s.config = json(m.config);
    if (!s.config.is_object()) s.config = nlohmann::ordered_json::object();
  }
  for (const Layer& l : m.layers) {
    s.size += l.size;
    const std::string& t = l.media_type;
    if (t == media::kModel) {
      if (s.model_path.empty()) s.model_path = blob(l);
    } else if (t == media::kProjector) {
      s.projector_paths.push_back(blob(l));
    } else if (t == media::kAdapter) {
      s.adapter_paths.push_back(blob(l));
    } else if (t == media::kTemplate || t == media::kPrompt) {
      s.template_text = text(l);
    } else if (t == media::kSystem) {
      s.system = text(l);
    } else if (t == media::kLicense) {
      s.licenses.push_back(text(l));
    } else if (t == media::kParams) {
      s.params = json(l);
      if (!s.params.is_object())
        throw Error("model " + name.display() + ": params are not an object");
    } else if (t == media::kMessages) {
      s.messages = json(l);
      if (!s.messages.is_array())
        throw Error("model " + name.display() + ": messages are not a list");
    }
  }
  return s;
}

std::vector<std::string> ModelStore::Impl::referenced_digests() const {
  std::vector<std::string> out;
  for (const auto& [n, p] : manifest_files(root)) {
    try {
      const Manifest m = Manifest::parse(read_file(p), p.string());
      out.push_back(m.config.digest);
      for (const Layer& l : m.layers) out.push_back(l.digest);
    } catch (const Error&) {
      // An unreadable manifest keeps nothing alive; it is reported by list().
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void ModelStore::Impl::collect_garbage(const Manifest& m) const {
  const std::vector<std::string> used = referenced_digests();
  std::vector<Layer> all = m.layers;
  all.push_back(m.config);
  for (const Layer& l : all) {
    if (l.digest.empty() || std::binary_search(used.begin(), used.end(), l.digest)) continue;
    std::error_code ec;
    fs::remove(own_blob(l.digest), ec);
  }
  fsync_dir(blobs_dir(root));
}

void ModelStore::Impl::import_blobs(const Manifest& m, const fs::path& from) const {
  if (from == root) return;
  std::vector<Layer> all = m.layers;
  all.push_back(m.config);
  for (const Layer& l : all) {
    const fs::path dst = own_blob(l.digest);
    std::error_code ec;
    if (fs::exists(dst, ec)) continue;
    const fs::path src = blobs_dir(from) / blob_file_name(l.digest);
    // A hard link costs nothing when both stores share a file system; else copy.
    TempFile tmp(blobs_dir(root));
    const fs::path tmp_path = tmp.path();
    if (::link(src.c_str(), (tmp_path.string() + "-link").c_str()) == 0) {
      fs::rename(tmp_path.string() + "-link", dst);
      fsync_dir(blobs_dir(root));
      continue;
    }
    std::ifstream in(src, std::ios::binary);
    if (!in) throw Error("cannot read blob " + src.string());
    std::vector<char> buf(1 << 20);
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      if (in.gcount() > 0) tmp.write(buf.data(), static_cast<size_t>(in.gcount()));
    }
    if (in.bad()) throw Error("cannot read blob " + src.string());
    tmp.commit_to(dst);
  }
}

// ---- ModelStore -------------------------------------------------------------------------

ModelStore::ModelStore(fs::path root, std::vector<fs::path> extra_roots)
    : impl_(std::make_unique<Impl>()) {
  impl_->root = fs::absolute(root).lexically_normal();
  for (auto& r : extra_roots) {
    fs::path a = fs::absolute(r).lexically_normal();
    std::error_code ec;
    if (a != impl_->root && !fs::equivalent(a, impl_->root, ec)) impl_->extras.push_back(a);
  }
}

ModelStore ModelStore::open_default() {
  const char* own = std::getenv("HOSTLM_MODELS");
  const fs::path root = own && *own ? fs::path(own) : home_dir() / ".hostlm" / "models";
  const char* ollama = std::getenv("OLLAMA_MODELS");
  const fs::path extra = ollama && *ollama ? fs::path(ollama) : home_dir() / ".ollama" / "models";
  std::vector<fs::path> extras;
  std::error_code ec;
  if (fs::is_directory(extra, ec)) extras.push_back(extra);
  return ModelStore(root, extras);
}

ModelStore::~ModelStore() = default;
ModelStore::ModelStore(ModelStore&&) noexcept = default;
ModelStore& ModelStore::operator=(ModelStore&&) noexcept = default;

const fs::path& ModelStore::root() const { return impl_->root; }
const std::vector<fs::path>& ModelStore::extra_roots() const { return impl_->extras; }

std::optional<StoredModel> ModelStore::find(std::string_view text) const {
  const ModelName name = ModelName::parse(text);
  if (auto p = impl_->find_manifest(impl_->root, name)) return impl_->load(impl_->root, name, *p);
  for (const fs::path& r : impl_->extras)
    if (auto p = impl_->find_manifest(r, name)) return impl_->load(r, name, *p);
  return std::nullopt;
}

StoredModel ModelStore::get(std::string_view name) const {
  auto m = find(name);
  if (!m) throw not_found("model '" + std::string(name) + "' not found");
  return *m;
}

std::vector<StoredModel> ModelStore::list(std::vector<std::string>* problems) const {
  std::vector<StoredModel> out;
  std::vector<fs::path> roots = {impl_->root};
  roots.insert(roots.end(), impl_->extras.begin(), impl_->extras.end());
  for (const fs::path& r : roots) {
    for (const auto& [name, path] : impl_->manifest_files(r)) {
      if (std::any_of(out.begin(), out.end(),
                      [&](const StoredModel& m) { return m.name.same_model(name); }))
        continue;
      try {
        out.push_back(impl_->load(r, name, path));
      } catch (const Error& e) {
        if (problems) problems->push_back(e.what());
      }
    }
  }
  return out;
}

bool ModelStore::remove(std::string_view text) {
  const ModelName name = ModelName::parse(text);
  std::error_code ec;
  if (!fs::is_directory(impl_->root, ec)) {
    for (const fs::path& r : impl_->extras)
      if (impl_->find_manifest(r, name))
        throw bad_request("model '" + std::string(text) + "' is in the read-only store " +
                          r.string() + " (remove it with ollama)");
    return false;
  }
  FileLock lock(impl_->lock_path(), true);
  const auto path = impl_->find_manifest(impl_->root, name);
  if (!path) {
    for (const fs::path& r : impl_->extras)
      if (impl_->find_manifest(r, name))
        throw bad_request("model '" + std::string(text) + "' is in the read-only store " +
                          r.string() + " (remove it with ollama)");
    return false;
  }
  const Manifest m = Manifest::parse(read_file(*path), path->string());
  if (!fs::remove(*path, ec) || ec)
    throw Error("cannot remove " + path->string() + ": " + ec.message());
  fsync_dir(path->parent_path());
  // Empty folders of the name go too (tag -> model -> namespace -> host).
  fs::path dir = path->parent_path();
  const fs::path stop = impl_->manifests_dir(impl_->root);
  while (dir != stop && fs::is_empty(dir, ec) && !ec) {
    fs::remove(dir, ec);
    dir = dir.parent_path();
  }
  fsync_dir(dir);
  impl_->collect_garbage(m);
  return true;
}

void ModelStore::copy(std::string_view src_text, std::string_view dst_text) {
  const ModelName src = ModelName::parse(src_text);
  const ModelName dst = ModelName::parse(dst_text);
  impl_->ensure_layout();
  FileLock lock(impl_->lock_path(), true);
  std::optional<fs::path> path;
  fs::path from_root = impl_->root;
  path = impl_->find_manifest(impl_->root, src);
  for (size_t i = 0; !path && i < impl_->extras.size(); ++i) {
    path = impl_->find_manifest(impl_->extras[i], src);
    from_root = impl_->extras[i];
  }
  if (!path) throw not_found("model '" + std::string(src_text) + "' not found");
  const std::string bytes = read_file(*path);
  impl_->import_blobs(Manifest::parse(bytes, path->string()), from_root);
  // An existing destination keeps its spelling, as Ollama matches names case-insensitively.
  const fs::path target = impl_->find_manifest(impl_->root, dst)
                              .value_or(impl_->manifests_dir(impl_->root) / dst.manifest_path());
  make_dirs(target.parent_path());
  std::optional<Manifest> old;
  std::error_code ec;
  if (fs::exists(target, ec)) old = Manifest::parse(read_file(target), target.string());
  write_file_atomic(target, bytes);
  if (old) impl_->collect_garbage(*old);
}

bool ModelStore::has_blob(std::string_view digest) const {
  std::error_code ec;
  return fs::is_regular_file(impl_->own_blob(normalize_digest(digest)), ec);
}

std::optional<fs::path> ModelStore::blob_path(std::string_view digest) const {
  const std::string d = normalize_digest(digest);
  std::error_code ec;
  if (fs::is_regular_file(impl_->own_blob(d), ec)) return impl_->own_blob(d);
  for (const fs::path& r : impl_->extras) {
    const fs::path p = impl_->blobs_dir(r) / blob_file_name(d);
    if (fs::is_regular_file(p, ec)) return p;
  }
  return std::nullopt;
}

void ModelStore::verify(const StoredModel& model, const ProgressFn& progress) const {
  std::vector<Layer> all = model.layers;
  all.push_back(model.config_layer);
  const fs::path blobs = impl_->blobs_dir(model.store_root);
  for (const Layer& l : all) {
    const fs::path p = blobs / blob_file_name(l.digest);
    std::ifstream in(p, std::ios::binary);
    if (!in) throw Error("model " + model.name.display() + ": blob " + l.digest + " is missing");
    Sha256 h;
    std::vector<char> buf(1 << 20);
    uint64_t done = 0;
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      h.update(buf.data(), static_cast<size_t>(in.gcount()));
      done += static_cast<uint64_t>(in.gcount());
      if (progress) progress({"verifying sha256 digest", l.digest, l.size, done});
    }
    const std::string got = "sha256:" + h.hex();
    if (got != l.digest)
      throw Error("model " + model.name.display() + ": blob " + p.string() +
                  " is corrupt (digest mismatch, expected \"" + l.digest + "\", got \"" + got +
                  "\")");
    if (done != l.size)
      throw Error("model " + model.name.display() + ": blob " + l.digest + " has " +
                  std::to_string(done) + " bytes, the manifest says " + std::to_string(l.size));
  }
}

size_t ModelStore::prune(std::chrono::seconds min_age) {
  std::error_code ec;
  if (!fs::is_directory(impl_->blobs_dir(impl_->root), ec)) return 0;
  FileLock lock(impl_->lock_path(), true);
  const std::vector<std::string> used = impl_->referenced_digests();
  const auto now = std::chrono::system_clock::now();
  size_t removed = 0;
  auto old_enough = [&](const fs::path& p) { return now - mtime_of(p) >= min_age; };
  for (const auto& e : fs::directory_iterator(impl_->blobs_dir(impl_->root), ec)) {
    const fs::path p = e.path();
    const std::string name = p.filename().string();
    bool drop = false;
    if (is_temp_name(p)) {
      drop = old_enough(p);
    } else if (name.rfind("sha256-", 0) == 0 && name.size() == 71) {
      drop = !std::binary_search(used.begin(), used.end(), "sha256:" + name.substr(7)) &&
             old_enough(p);
    }
    if (drop && fs::remove_all(p, ec) > 0) ++removed;
  }
  // Temporary manifests a killed process left next to the real ones.
  for (auto it = fs::recursive_directory_iterator(impl_->manifests_dir(impl_->root), ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (is_temp_name(it->path()) && old_enough(it->path()) && fs::remove(it->path(), ec)) ++removed;
  }
  return removed;
}

}  // namespace hostlm::ollama
