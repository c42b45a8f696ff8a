// ModelStore::create: the server side of `ollama create` (spec 1.6). Base layers come from
// another model, a GGUF, or a Hugging Face folder converted by its plugin; then the text and
// JSON layers, the config blob, and last the manifest, renamed into place under the
// exclusive store lock.
#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

#include "digest.h"
#include "fs_util.h"
#include "gguf_info.h"
#include "hostlm/model_loader.h"
#include "hostlm/ollama/go_template.h"
#include "hostlm/quantize.h"
#include "hostlm/registry.h"
#include "hostlm/safetensors.h"
#include "store_impl.h"
#include "text_util.h"

namespace hostlm::ollama {
namespace fs = std::filesystem;
namespace {

// Plugins throw errors whose code lives in their library: the registry stays loaded for
// the life of the process.
PluginRegistry& plugin_registry() {
  static PluginRegistry registry;
  return registry;
}

bool no_prune() {
  for (const char* var : {"OLLAMA_NOPRUNE", "HOSTLM_NOPRUNE"}) {
    const char* v = std::getenv(var);
    if (v && *v && std::string_view(v) != "0" && to_lower(v) != "false") return true;
  }
  return false;
}

// A folder under blobs/ that goes away with this object (prune() removes one a killed
// process left behind).
class TempDir {
 public:
  explicit TempDir(const fs::path& parent) {
    std::string pattern = (parent / (std::string(kTempPrefix) + "dir-XXXXXX")).string();
    if (!::mkdtemp(pattern.data()))
      throw Error("cannot create a temporary folder in " + parent.string());
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// The storage type a converted checkpoint keeps: the float type most of its bytes have.
DType conversion_type(const HfCheckpoint& hf) {
  std::map<DType, uint64_t> bytes;
  for (const TensorView& t : hf.tensors()) bytes[t.type] += t.nbytes;
  DType best = DType::BF16;
  uint64_t most = 0;
  for (auto [type, n] : bytes)
    if ((type == DType::F32 || type == DType::F16 || type == DType::BF16) && n > most) {
      best = type;
      most = n;
    }
  return best;
}

// Qwen3.5 family checkpoints get the qwen3.5 renderer and parser, as Ollama's importer does.
bool is_qwen35_family(const nlohmann::json& config) {
  auto matches = [](const nlohmann::json& v) {
    if (!v.is_string()) return false;
    const std::string s = to_lower(v.get<std::string>());
    return s.find("qwen3_5") != std::string::npos || s.find("qwen3next") != std::string::npos;
  };
  if (matches(config.value("model_type", nlohmann::json()))) return true;
  if (const auto a = config.find("architectures"); a != config.end() && a->is_array())
    return std::any_of(a->begin(), a->end(), matches);
  return false;
}

// The config blob's keys in the order Go writes ConfigV2.
nlohmann::ordered_json ordered_config(const nlohmann::ordered_json& c) {
  nlohmann::ordered_json out;
  auto str = [&](const char* k) { return c.value(k, nlohmann::ordered_json("")); };
  out["model_format"] = str("model_format");
  out["model_family"] = str("model_family");
  out["model_families"] = c.value("model_families", nlohmann::ordered_json(nullptr));
  out["model_type"] = str("model_type");
  out["file_type"] = str("file_type");
  for (const char* k : {"renderer", "parser", "requires", "remote_host", "remote_model",
                        "capabilities", "context_length", "embedding_length", "base_name", "draft"})
    if (const auto it = c.find(k);
        it != c.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty()))
      out[k] = *it;
  out["architecture"] = "amd64";
  out["os"] = "linux";
  return out;
}

void remove_layers(std::vector<Layer>& layers, std::initializer_list<const char*> types) {
  std::erase_if(layers, [&](const Layer& l) {
    return std::any_of(types.begin(), types.end(),
                       [&](const char* t) { return l.media_type == t; });
  });
}

}  // namespace

StoredModel ModelStore::create(std::string_view name_text, const CreateRequest& req,
                               const ProgressFn& progress_fn) {
  const ProgressFn progress = progress_fn ? progress_fn : [](const Progress&) {};
  ModelName name = ModelName::parse(name_text);

  // Everything that can be refused is refused before any byte is written.
  const bool has_files = !req.files.empty() || !req.local_files.empty();
  if (!req.adapters.empty() || !req.local_adapters.empty())
    throw bad_request("LoRA adapters are not supported yet (ADAPTER)");
  if (req.from.empty() && !has_files) throw bad_request("neither 'from' or 'files' was specified");
  if (!req.from.empty() && has_files)
    throw bad_request("give either 'from' (a model name) or 'files', not both");
  if (req.template_text) {
    try {
      GoTemplate::parse(*req.template_text);
    } catch (const RequestError& e) {
      throw bad_request(std::string("template error: ") + e.what());
    }
  }
  std::optional<QuantScheme> quant_scheme;
  if (!req.quantize.empty()) {
    quant_scheme = parse_quant_scheme(req.quantize);
    if (!quant_scheme)
      throw bad_request("unsupported quantization type " + req.quantize +
                        " - supported types are " + quant_scheme_names());
  }
  for (const auto& [file, digest] : req.files) normalize_digest(digest);

  impl_->ensure_layout();
  if (auto existing = impl_->find_manifest(impl_->root, name)) {
    // Reuse the spelling of an existing name that differs only in case.
    const fs::path rel = existing->lexically_relative(impl_->manifests_dir(impl_->root));
    auto it = rel.begin();
    name.host = (it++)->string();
    name.ns = (it++)->string();
    name.model = (it++)->string();
    name.tag = (it++)->string();
  }
  // Shared until the manifest is written: rm, prune and the garbage collection of other
  // creates (exclusive) cannot delete the blobs this create is using.
  auto shared = std::make_unique<FileLock>(impl_->lock_path(), false);
  std::vector<std::string> created;     // blobs this call added: removed again if it fails
  std::vector<std::string> superseded;  // blobs replaced on the way (unquantized weights)
  try {
    std::vector<Layer> layers;
    nlohmann::ordered_json config = nlohmann::ordered_json::object();
    nlohmann::ordered_json base_params = nlohmann::ordered_json::object();

    auto layer_status = [&](const Layer& l, bool existed) {
      progress({(existed ? "using existing layer " : "creating new layer ") + l.digest, "", 0, 0});
    };
    auto add_gguf = [&](const std::string& file_name, const std::string& digest, bool existed) {
      progress({"parsing GGUF", "", 0, 0});
      const fs::path path = impl_->own_blob(digest);
      const GgufSummary g = summarize_gguf(path);
      if (g.kind == "adapter")
        throw bad_request("LoRA adapters are not supported yet (" + file_name + ")");
      std::error_code ec;
      Layer l{g.is_projector ? media::kProjector : media::kModel, digest, fs::file_size(path, ec),
              file_name};
      if (!g.is_projector && !config.contains("model_format")) {
        config["model_format"] = "gguf";
        config["model_family"] = g.architecture;
        config["model_families"] = nlohmann::ordered_json::array({g.architecture});
        config["model_type"] = human_number(g.parameter_count);
        config["file_type"] = g.file_type;
      }
      layer_status(l, existed);
      layers.push_back(l);
    };
    // A blob named by digest in `files`: present in the store, and checked again now.
    auto existing_blob = [&](const std::string& digest) {
      const auto p = blob_path(digest);
      if (!p)
        throw bad_request("blob " + digest + " not found (upload it with POST /api/blobs/" +
                          digest + ")");
      if (*p != impl_->own_blob(digest)) {
        Manifest one;
        one.config = Layer{"", digest, 0, ""};
        impl_->import_blobs(one, p->parent_path().parent_path());
      }
      std::ifstream in(impl_->own_blob(digest), std::ios::binary);
      Sha256 h;
      std::vector<char> buf(4 << 20);
      uint64_t done = 0;
      std::error_code ec;
      const uint64_t total = fs::file_size(impl_->own_blob(digest), ec);
      while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        h.update(buf.data(), static_cast<size_t>(in.gcount()));
        done += static_cast<uint64_t>(in.gcount());
        progress({"verifying sha256 digest", digest, total, done});
      }
      const std::string got = "sha256:" + h.hex();
      if (got != digest)
        throw Error("blob " + digest + " in the store is corrupt (digest mismatch, got \"" + got +
                    "\")");
    };
    auto copy_local = [&](const fs::path& path, bool& existed) {
      BlobWriter w = begin_blob();
      std::ifstream in(path, std::ios::binary);
      if (!in) throw bad_request(path.string() + ": cannot open");
      std::error_code ec;
      const uint64_t total = fs::file_size(path, ec);
      std::vector<char> buf(4 << 20);
      while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        if (in.gcount() > 0) w.write(buf.data(), static_cast<size_t>(in.gcount()));
        progress({"copying file", "", total, w.bytes_written()});
      }
      if (in.bad()) throw Error(path.string() + ": read failed");
      const std::string digest = w.commit();
      existed = w.existed();
      if (!existed) created.push_back(digest);
      return digest;
    };

    // A finished file under blobs/ becomes a blob by renaming, not copying.
    auto adopt = [&](const fs::path& path, bool& existed) {
      std::ifstream in(path, std::ios::binary);
      Sha256 h;
      std::vector<char> buf(4 << 20);
      while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        h.update(buf.data(), static_cast<size_t>(in.gcount()));
      }
      if (in.bad()) throw Error(path.string() + ": read failed");
      const std::string digest = "sha256:" + h.hex();
      const fs::path target = impl_->own_blob(digest);
      std::error_code ec;
      existed = fs::exists(target, ec);
      if (!existed) {
        fs::rename(path, target);
        fsync_dir(target.parent_path());
        created.push_back(digest);
      }
      return digest;
    };
    // Ollama's `create --quantize`: the model layer re-encoded (only from F32/F16/BF16).
    auto quantize_weights = [&](QuantScheme scheme) {
      auto it = std::find_if(layers.begin(), layers.end(),
                             [](const Layer& l) { return l.media_type == media::kModel; });
      if (it == layers.end()) throw bad_request("the model has no weights to quantize");
      const std::string from_type = config.value("file_type", std::string());
      const std::string to_type(quant_scheme_name(scheme));
      if (from_type == to_type) return;
      if (from_type != "F32" && from_type != "F16" && from_type != "BF16")
        throw bad_request("quantization is only supported for F16, BF16 and F32 models");
      const std::string status = "quantizing " + from_type + " model to " + to_type;
      progress({status, "", 0, 0});
      TempDir dir(impl_->blobs_dir(impl_->root));
      const fs::path out = dir.path() / "quantized.gguf";
      QuantizeOptions options;
      options.progress = [&](const QuantizeProgress& q) {
        progress({status, "", q.count, q.index});
      };
      quantize_gguf_file(impl_->own_blob(it->digest), out, scheme, options);
      bool existed = false;
      const std::string digest = adopt(out, existed);
      superseded.push_back(it->digest);
      const GgufSummary g = summarize_gguf(impl_->own_blob(digest));
      std::error_code ec;
      *it = Layer{media::kModel, digest, fs::file_size(impl_->own_blob(digest), ec), it->from};
      config["file_type"] = g.file_type;
      layer_status(*it, existed);
    };

    if (!req.from.empty()) {
      const StoredModel base = get(req.from);
      Manifest bm{base.config_layer, base.layers};
      impl_->import_blobs(bm, base.store_root);
      for (Layer l : base.layers) {
        l.from = base.name.display();
        layers.push_back(l);
        layer_status(l, true);
      }
      config = base.config;
      base_params = base.params;
    } else {
      // Every file name of the request, with where its bytes are.
      std::map<std::string, fs::path> sources;
      std::map<std::string, std::string> digests = req.files;
      for (const auto& [file, path] : req.local_files) sources[file] = path;
      for (const auto& [file, digest] : req.files)
        if (!sources.count(file)) sources[file] = fs::path();
      const bool safetensors = std::any_of(sources.begin(), sources.end(), [](const auto& s) {
        return s.first.size() > 12 && s.first.compare(s.first.size() - 12, 12, ".safetensors") == 0;
      });
      if (!safetensors) {
        for (const auto& [file, path] : sources) {
          const bool gguf_name = file.size() > 5 && file.compare(file.size() - 5, 5, ".gguf") == 0;
          if (!path.empty()) {
            if (!looks_like_gguf(path)) {
              if (!gguf_name) continue;  // config/tokenizer files of a GGUF folder
              throw bad_request("supplied file was not in GGUF format (" + file + ")");
            }
            bool existed = false;
            add_gguf(file, copy_local(path, existed), existed);
          } else {
            const auto bp = blob_path(digests[file]);
            if (!gguf_name && !(bp && looks_like_gguf(*bp))) continue;
            existing_blob(digests[file]);
            add_gguf(file, digests[file], true);
          }
        }
        if (layers.empty()) throw bad_request("supplied file was not in GGUF format");
      } else {
        // A folder of links to the files, which the plugin converts to one GGUF.
        TempDir dir(impl_->blobs_dir(impl_->root));
        for (const auto& [file, path] : sources) {
          fs::path src = path;
          if (src.empty()) {
            existing_blob(digests[file]);
            src = impl_->own_blob(digests[file]);
          }
          const fs::path link = dir.path() / file;
          make_dirs(link.parent_path());
          fs::create_symlink(src, link);
        }
        progress({"converting model", "", 0, 0});
        const fs::path out = dir.path() / "converted.gguf";
        nlohmann::json hf_config;
        try {
          OpenedModelFiles opened(dir.path());
          if (!opened.files().hf)
            throw bad_request("the files are not a Hugging Face safetensors model");
          hf_config = opened.files().hf->config();
          plugin_registry()
              .plugin_for(opened.files().architecture)
              .convert_to_gguf(*opened.files().hf, conversion_type(*opened.files().hf), out);
        } catch (const RequestError&) {
          throw;
        } catch (const Error& e) {
          // The folder is a temporary one: name what the user gave instead.
          std::string msg = e.what();
          for (size_t at; (at = msg.find(dir.path().string())) != std::string::npos;)
            msg.replace(at, dir.path().string().size(), "<model folder>");
          throw bad_request("cannot convert the model: " + msg);
        }
        bool existed = false;
        const std::string digest = adopt(out, existed);
        add_gguf("model.gguf", digest, existed);
        if (is_qwen35_family(hf_config)) {
          if (!config.contains("renderer")) config["renderer"] = "qwen3.5";
          if (!config.contains("parser")) config["parser"] = "qwen3.5";
        }
      }
    }
    if (quant_scheme) quantize_weights(*quant_scheme);
    test_pause_point("after-weights");

    // Text and JSON layers.
    auto put_small = [&](const std::string& bytes, const char* media_type) {
      BlobWriter w = begin_blob();
      w.write(bytes.data(), bytes.size());
      Layer l{media_type, w.commit(), bytes.size(), ""};
      if (!w.existed()) created.push_back(l.digest);
      layer_status(l, w.existed());
      layers.push_back(l);
    };
    if (req.template_text) {
      remove_layers(layers, {media::kTemplate, media::kPrompt});
      put_small(*req.template_text, media::kTemplate);
    }
    if (req.system) {
      remove_layers(layers, {media::kSystem});
      if (!req.system->empty()) put_small(*req.system, media::kSystem);
    }
    for (const std::string& l : req.license) put_small(l, media::kLicense);
    nlohmann::json params = req.parameters;  // sorted keys, as Go writes a map
    for (const auto& [k, v] : base_params.items())
      if (!params.contains(k)) params[k] = v;
    if (!params.empty()) {
      remove_layers(layers, {media::kParams});
      put_small(go_json(nlohmann::ordered_json(params)), media::kParams);
    }
    if (req.messages && !req.messages->empty()) {
      remove_layers(layers, {media::kMessages});
      put_small(go_json(*req.messages), media::kMessages);
    }
    if (req.renderer) config["renderer"] = *req.renderer;
    if (req.parser) config["parser"] = *req.parser;
    if (req.requires_version) config["requires"] = *req.requires_version;
    Manifest manifest;
    {
      const std::string bytes = go_json(ordered_config(config));
      BlobWriter w = begin_blob();
      w.write(bytes.data(), bytes.size());
      manifest.config = Layer{media::kConfig, w.commit(), bytes.size(), ""};
      if (!w.existed()) created.push_back(manifest.config.digest);
    }
    manifest.layers = layers;

    progress({"writing manifest", "", 0, 0});
    test_pause_point("before-manifest");
    // Manifest writes are serialised so each create sees the one it replaces; the shared
    // store lock is still held, so no blob of this model can have been collected.
    const fs::path target = impl_->manifests_dir(impl_->root) / name.manifest_path();
    std::optional<Manifest> old;
    {
      FileLock commit(impl_->commit_lock_path(), true);
      std::vector<Layer> all = layers;
      all.push_back(manifest.config);
      for (const Layer& l : all)
        if (!has_blob(l.digest)) throw Error("blob " + l.digest + " is missing from the store");
      std::error_code ec;
      if (fs::exists(target, ec)) {
        try {
          old = Manifest::parse(read_file(target), target.string());
        } catch (const Error&) {
          // A corrupt old manifest is simply replaced.
        }
      }
      make_dirs(target.parent_path());
      const std::string bytes = manifest.to_bytes();
      TempFile tmp(target.parent_path());
      tmp.write(bytes.data(), bytes.size());
      test_pause_point("manifest-temp");
      tmp.commit_to(target);
    }
    StoredModel result = impl_->load(impl_->root, name, target);
    // The replaced model's blobs go once no create is running (they may be using them).
    shared.reset();
    Manifest garbage;
    if (old && !no_prune()) garbage = *old;
    for (const std::string& d : superseded) garbage.layers.push_back(Layer{"", d, 0, ""});
    if (!garbage.layers.empty() || !garbage.config.digest.empty()) {
      FileLock exclusive(impl_->lock_path(), true);
      impl_->collect_garbage(garbage);
    }
    progress({"success", "", 0, 0});
    return result;
  } catch (...) {
    // A failed create leaves no blob behind that nothing uses (unless another create
    // started using it meanwhile: the exclusive lock and the reference check decide).
    shared.reset();
    try {
      FileLock exclusive(impl_->lock_path(), true);
      const std::vector<std::string> used = impl_->referenced_digests();
      for (const std::string& d : created) {
        std::error_code ec;
        if (!std::binary_search(used.begin(), used.end(), d)) fs::remove(impl_->own_blob(d), ec);
      }
    } catch (const std::exception&) {
      // Clean-up is best effort; prune() removes what is left.
    }
    throw;
  }
}

}  // namespace hostlm::ollama
