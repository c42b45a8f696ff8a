// What the ModelStore's files share: the roots, the lock, manifest and blob paths, and
// reading one model from its manifest.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "hostlm/ollama/store.h"
#include "manifest.h"

namespace hostlm::ollama {

struct ModelStore::Impl {
  std::filesystem::path root;
  std::vector<std::filesystem::path> extras;

  std::filesystem::path blobs_dir(const std::filesystem::path& r) const { return r / "blobs"; }
  std::filesystem::path manifests_dir(const std::filesystem::path& r) const {
    return r / "manifests";
  }
  // Shared: a create is running; exclusive: blobs may be deleted (rm, prune, collection).
  std::filesystem::path lock_path() const { return root / ".hostlm-store.lock"; }
  // Exclusive while a create reads the manifest it replaces and writes its own.
  std::filesystem::path commit_lock_path() const { return root / ".hostlm-commit.lock"; }
  std::filesystem::path own_blob(const std::string& digest) const;
  // Creates blobs/ and manifests/ of the own root.
  void ensure_layout() const;

  // Every manifest file below `r` (exactly four levels), with the name it stands for.
  std::vector<std::pair<ModelName, std::filesystem::path>> manifest_files(
      const std::filesystem::path& r) const;
  // The manifest file of `name` in `r` (exact spelling first, then case-insensitive).
  std::optional<std::filesystem::path> find_manifest(const std::filesystem::path& r,
                                                     const ModelName& name) const;
  StoredModel load(const std::filesystem::path& r, const ModelName& name,
                   const std::filesystem::path& manifest_file) const;
  // Digests of every blob the own root's manifests use (config included).
  std::vector<std::string> referenced_digests() const;
  // Deletes the blobs of `m` that no manifest of the own root references any more.
  void collect_garbage(const Manifest& m) const;
  // Makes sure every blob of `m` (found in root `from`) is in the own root.
  void import_blobs(const Manifest& m, const std::filesystem::path& from) const;
};

}  // namespace hostlm::ollama
