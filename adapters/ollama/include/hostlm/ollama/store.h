// An Ollama-compatible model store (ecosystem spec 1.7): content-addressed blobs under
// `blobs/sha256-<hex>` and Docker v2 JSON manifests under `manifests/<host>/<ns>/<model>/<tag>`.
//
// The store's own root is writable; extra roots (an existing Ollama store) are read-only
// sources that find() and list() also search, so models pulled by Ollama run unchanged.
// Every write is atomic (temporary file, fsync, rename, fsync of the folder); a file lock
// keeps concurrent creates and removals in this and other processes from corrupting it.
// All methods are safe to call from several threads at once.
//
// Errors: RequestError (errors.h) for what the caller got wrong (400/404), hostlm::Error
// for everything else.
#pragma once
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <istream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hostlm/ollama/errors.h"
#include "hostlm/ollama/model_name.h"

namespace hostlm::ollama {

// Media types of manifest layers.
namespace media {
inline constexpr const char* kManifest = "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr const char* kConfig = "application/vnd.docker.container.image.v1+json";
inline constexpr const char* kModel = "application/vnd.ollama.image.model";
inline constexpr const char* kProjector = "application/vnd.ollama.image.projector";
inline constexpr const char* kAdapter = "application/vnd.ollama.image.adapter";
inline constexpr const char* kTemplate = "application/vnd.ollama.image.template";
inline constexpr const char* kPrompt = "application/vnd.ollama.image.prompt";  // legacy template
inline constexpr const char* kSystem = "application/vnd.ollama.image.system";
inline constexpr const char* kParams = "application/vnd.ollama.image.params";
inline constexpr const char* kMessages = "application/vnd.ollama.image.messages";
inline constexpr const char* kLicense = "application/vnd.ollama.image.license";
}  // namespace media

// Digests: "sha256:<64 hex>" in JSON and APIs, "sha256-<64 hex>" in file names; both are
// accepted wherever a digest is read (case-insensitive hex). Anything else:
// RequestError(kBadRequest, "invalid digest format").
std::string normalize_digest(std::string_view digest);  // -> "sha256:<lowercase hex>"

struct Layer {
  std::string media_type;
  std::string digest;  // "sha256:<hex>"
  uint64_t size = 0;
  std::string from;  // optional: the source model or file name
};

// A model found in a store, with its small layers already read.
struct StoredModel {
  ModelName name;
  std::string digest;  // hex sha256 of the manifest file bytes (`ollama ls` ID: first 12)
  uint64_t size = 0;   // layers + config
  std::chrono::system_clock::time_point modified_at;  // manifest mtime
  std::filesystem::path store_root;                   // the root it was found in
  bool read_only = false;                             // found in an extra (Ollama) source

  std::filesystem::path model_path;  // the GGUF weights blob (empty: none)
  std::vector<std::filesystem::path> projector_paths;
  std::vector<std::filesystem::path> adapter_paths;
  std::optional<std::string> template_text;  // TEMPLATE layer
  std::optional<std::string> system;         // SYSTEM layer
  std::vector<std::string> licenses;
  nlohmann::ordered_json params = nlohmann::ordered_json::object();   // PARAMETERs
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // MESSAGEs
  // Config blob: model_format, model_family, model_families, model_type, file_type,
  // renderer, parser, requires, ... (ecosystem spec 1.7).
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  Layer config_layer;
  std::vector<Layer> layers;

  // config["renderer"] / ["parser"] or "".
  std::string renderer() const;
  std::string parser() const;
  // /api/tags "details": parent_model, format, family, families, parameter_size,
  // quantization_level.
  nlohmann::ordered_json details() const;
};

// Progress of create/pull/push in the shape of Ollama's stream objects (spec 3.9):
// {"status"} optionally with {"digest","total","completed"}.
struct Progress {
  std::string status;
  std::string digest;
  uint64_t total = 0;
  uint64_t completed = 0;
  nlohmann::ordered_json to_json() const;
};
using ProgressFn = std::function<void(const Progress&)>;

// The body of Ollama's POST /api/create (from_json) or what a Modelfile asks for
// (modelfile.h). Exactly one of `from` and `files` gives the weights.
struct CreateRequest {
  std::string from;  // a model name in the store (its layers are inherited)
  // Weights: file name relative to the model's folder ("model.gguf", "config.json",
  // "sub/x.safetensors") -> digest "sha256:<hex>" of a blob already in the store
  // (POST /api/blobs). One .gguf, or the files of a Hugging Face safetensors folder.
  std::map<std::string, std::string> files;
  // Where the same names are found on this machine, when they are (the CLI fills this from
  // the Modelfile so nothing has to be uploaded first). Names with a path here need no
  // digest in `files`; GGUF files are hashed and copied into the store, folders converted
  // in place. Never filled from JSON.
  std::map<std::string, std::filesystem::path> local_files;
  std::map<std::string, std::string> adapters;  // same shapes; refused: LoRA not supported
  std::map<std::string, std::filesystem::path> local_adapters;
  std::optional<std::string> template_text;
  std::optional<std::string> system;
  std::vector<std::string> license;
  // Typed parameters ({"temperature": 1, "stop": ["<|im_end|>"]}); merged over the base's.
  nlohmann::ordered_json parameters = nlohmann::ordered_json::object();
  std::optional<nlohmann::ordered_json> messages;  // [{"role","content"}]; replaces the base's
  std::optional<std::string> renderer, parser, requires_version;
  std::string quantize;  // e.g. "q8_0"; empty: keep the weights as they are

  // Reads the JSON body of /api/create (keys: model, from, files, adapters, template,
  // system, license (string or list), parameters, messages, renderer, parser, requires,
  // quantize). Parameters are type-checked like PARAMETER lines. Throws RequestError.
  static CreateRequest from_json(const nlohmann::json& body);
};

// Writes one blob: feed the bytes, then commit with the digest they must have.
class BlobWriter {
 public:
  ~BlobWriter();  // an uncommitted blob is discarded
  BlobWriter(BlobWriter&&) noexcept;
  BlobWriter& operator=(BlobWriter&&) noexcept;
  void write(const void* data, size_t n);
  uint64_t bytes_written() const;
  // fsyncs and renames into place; returns "sha256:<hex>" of what was written. When
  // `expected` is given and differs: RequestError(kBadRequest,
  // "digest mismatch, expected \"sha256:...\", got \"sha256:...\"") and nothing is stored.
  std::string commit(std::optional<std::string_view> expected = std::nullopt);
  // After commit: whether the store already had this blob (POST /api/blobs: 200, else 201).
  bool existed() const;

 private:
  friend class ModelStore;
  struct Impl;
  explicit BlobWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class ModelStore {
 public:
  // root: the writable store (created on first write). extra_roots: read-only sources.
  explicit ModelStore(std::filesystem::path root,
                      std::vector<std::filesystem::path> extra_roots = {});
  // $HOSTLM_MODELS or ~/.hostlm/models; extra source $OLLAMA_MODELS or ~/.ollama/models
  // when that folder exists and is not the same as the root.
  static ModelStore open_default();
  ~ModelStore();
  ModelStore(ModelStore&&) noexcept;
  ModelStore& operator=(ModelStore&&) noexcept;

  const std::filesystem::path& root() const;
  const std::vector<std::filesystem::path>& extra_roots() const;

  // The model of that name (own root first, then the extra roots), or nullopt.
  // Invalid name: RequestError(kBadRequest). A corrupt manifest: hostlm::Error.
  std::optional<StoredModel> find(std::string_view name) const;
  // As find(), but RequestError(kNotFound, "model '<name>' not found") when absent.
  StoredModel get(std::string_view name) const;
  // Every model, own root first; a name in the own root hides the same name elsewhere.
  // Manifests that cannot be read are skipped (reported through `problems` if given).
  std::vector<StoredModel> list(std::vector<std::string>* problems = nullptr) const;

  // Removes the model from the own root and deletes its blobs that no other manifest
  // uses. Returns false when it is not there (404). A model only in an extra root:
  // RequestError(kBadRequest).
  bool remove(std::string_view name);
  // Copies the manifest (blobs are shared); RequestError(kNotFound) if src is missing.
  void copy(std::string_view src, std::string_view dst);

  // Blobs of the own root (also the extra roots for blob_path).
  bool has_blob(std::string_view digest) const;
  std::optional<std::filesystem::path> blob_path(std::string_view digest) const;
  BlobWriter begin_blob();
  // Stores a stream; true when the blob was new, false when it was already there (the
  // stream is then still read and checked). Digest mismatch: RequestError(kBadRequest).
  bool put_blob(std::string_view digest, std::istream& in);
  // Hashes and copies a file into the store; returns its "sha256:<hex>".
  std::string put_file(const std::filesystem::path& path, const ProgressFn& progress = {});

  // Creates (or replaces) a model. Progress statuses as Ollama's (spec 3.9), ending with
  // "success". The old manifest's unreferenced blobs are deleted unless OLLAMA_NOPRUNE or
  // HOSTLM_NOPRUNE is set.
  StoredModel create(std::string_view name, const CreateRequest& request,
                     const ProgressFn& progress = {});

  // Downloads a model from its registry (OCI distribution paths, spec 1.8:
  // {scheme}://{host}/v2/{namespace}/{model}/manifests/{tag} and .../blobs/{digest}), e.g.
  // `qwen3.5:9b` from registry.ollama.ai or `hf.co/USER/REPO:QUANT` from Hugging Face; the
  // manifest lands under manifests/<host>/... with the name's own host. A registry that
  // answers 401 with a Bearer challenge gets the token handshake (same host only).
  // $HOSTLM_REGISTRY_OVERRIDE (`host=url,...`) sends a host's requests elsewhere;
  // $HOSTLM_CA_BUNDLE (or CURL_CA_BUNDLE, SSL_CERT_FILE) names the CAs to trust.
  // Blobs already in the store are skipped; a dropped download is resumed with a Range
  // request, in the same pull (a few retries) or the next one (from its
  // `blobs/sha256-<hex>-partial` file); every blob is verified before it is kept, a
  // mismatch is hostlm::Error("digest mismatch, file must be downloaded again: want
  // sha256:..., got sha256:...") and drops the partial file. Progress: "pulling manifest",
  // "pulling <digest 12>" with totals, "verifying sha256 digest", "writing manifest",
  // "success". Unknown model: RequestError(kNotFound). `insecure`: no TLS certificate
  // checks (a `http://` name is plain HTTP anyway).
  StoredModel pull(std::string_view name, const ProgressFn& progress = {}, bool insecure = false);
  // Uploads a model's blobs (those the registry lacks) and then its manifest.
  void push(std::string_view name, const ProgressFn& progress = {}, bool insecure = false);

  // Re-hashes every blob of the model; hostlm::Error naming the first bad one.
  void verify(const StoredModel& model, const ProgressFn& progress = {}) const;

  // Deletes blobs of the own root no manifest references and leftover temporary files,
  // both only when older than `min_age` (Ollama prunes at start-up with one hour).
  // Returns how many files were deleted.
  size_t prune(std::chrono::seconds min_age = std::chrono::hours(1));

 private:
  friend class BlobWriter;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hostlm::ollama
