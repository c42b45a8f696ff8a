// One plugin library, opened, checked against the host's ABI and asked for its plugin.
#pragma once
#include <memory>
#include <string>

#include "hostlm/plugin_api.h"
#include "hostlm/registry.h"

namespace hostlm::registry {

// "plugin 'name' (manifest /path/name.json)": how every message about a plugin starts.
std::string describe(const PluginManifest& manifest);

class LoadedPlugin {
 public:
  // Loads manifest.library, checks its entry symbols and ABI version before calling its
  // factory. Throws hostlm::Error naming the manifest and the library.
  explicit LoadedPlugin(const PluginManifest& manifest);
  // Destroys the plugin object before unloading the library that holds its code.
  ~LoadedPlugin();
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;

  ArchitecturePlugin& plugin() { return *plugin_; }

 private:
  struct Library;  // keeps Boost.DLL out of this header
  std::unique_ptr<Library> library_;
  std::unique_ptr<ArchitecturePlugin> plugin_;
};

}  // namespace hostlm::registry
