// Finds architecture plugins through their JSON manifests and loads their libraries on
// demand (Boost.DLL). Every failure is a hostlm::Error with a readable message.
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "hostlm/plugin_api.h"

namespace hostlm {

struct PluginManifest {
  std::string name;
  std::string version;
  int abi_version = 0;
  std::filesystem::path library;  // resolved absolute path
  std::filesystem::path manifest_path;
  std::vector<std::string> gguf_architectures;  // general.architecture values
  std::vector<std::string> hf_architectures;    // config.json "architectures" entries
  std::string description;                      // optional, one line for humans
};

class PluginRegistry {
 public:
  // The default search path, in order: the build tree, the install prefix,
  // $HOSTLM_PLUGIN_PATH (colon-separated), ~/.local/share/hostlm/plugins.
  static std::vector<std::filesystem::path> default_search_path();
  // The same with `plugin_path` in place of $HOSTLM_PLUGIN_PATH (a server re-reading its
  // settings file passes that file's value).
  static std::vector<std::filesystem::path> default_search_path(const std::string& plugin_path);

  // Reads every *.json manifest in the given folders (each folder may hold manifests
  // directly or in a manifests/ subfolder). Manifest errors and two plugins claiming one
  // architecture are collected into problems() and, for conflicts, make the architecture
  // unusable with an error that names both manifests.
  explicit PluginRegistry(std::vector<std::filesystem::path> search_path);
  PluginRegistry();  // default_search_path()
  ~PluginRegistry();
  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

  // Not to be called while another thread runs rescan(): rescan replaces what they refer to.
  const std::vector<PluginManifest>& manifests() const;
  const std::vector<std::string>& problems() const;  // readable, one per bad manifest
  const std::vector<std::filesystem::path>& search_path() const;

  // Reads the manifests again from `search_path` (a server's SIGHUP: plugins installed or
  // removed since). Plugins already loaded stay loaded, since models made by them may still
  // run; a manifest naming the same library file gets the same plugin back. Safe while other
  // threads call plugin_for().
  void rescan(std::vector<std::filesystem::path> search_path);

  // Loads (once) and returns the plugin claiming `architecture` (GGUF or HF name).
  // Throws hostlm::Error: unknown architecture, conflicting claims, missing library,
  // missing entry symbols, wrong ABI version. Safe to call from several threads.
  // The library stays loaded as long as the registry lives: models and sequences made by
  // the plugin run its code, so destroy them before the registry.
  ArchitecturePlugin& plugin_for(const std::string& architecture);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hostlm
