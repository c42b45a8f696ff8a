#define BOOST_DLL_USE_STD_FS
#include "registry/loaded_plugin.h"

#include <dlfcn.h>

#include <boost/dll/shared_library.hpp>
#include <exception>
#include <filesystem>
#include <system_error>

#include "hostlm/error.h"

namespace fs = std::filesystem;

namespace hostlm::registry {

struct LoadedPlugin::Library {
  boost::dll::shared_library handle;
};

std::string describe(const PluginManifest& manifest) {
  return "plugin '" + manifest.name + "' (manifest " + manifest.manifest_path.string() + ")";
}

namespace {

constexpr const char* kAbiSymbol = "hostlm_plugin_abi_version";
constexpr const char* kCreateSymbol = "hostlm_plugin_create";

// Boost.DLL reports a failed dlopen as a bare errno-style code; the loader's own text
// ("undefined symbol: ...", "invalid ELF header") is what tells a user what is wrong.
std::string loader_message(const fs::path& library, const std::error_code& ec) {
  if (const char* text = ::dlerror()) return text;
  // Something between the failed dlopen and here cleared the text: ask the loader again.
  if (void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    ::dlclose(handle);
  } else if (const char* text = ::dlerror()) {
    return text;
  }
  return ec.message();
}

}  // namespace

LoadedPlugin::LoadedPlugin(const PluginManifest& manifest) : library_(std::make_unique<Library>()) {
  const std::string who = describe(manifest);
  const fs::path& path = manifest.library;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw Error(who + ": library file not found: " + path.string());

  ::dlerror();  // a stale message must not be mistaken for this load's
  // Binding every symbol now turns a plugin built against another libhostlm into a load
  // error naming the symbol, instead of a crash at its first call.
  library_->handle.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local,
                        ec);
  if (ec)
    throw Error(who + ": cannot load library " + path.string() + ": " + loader_message(path, ec));

  std::string missing;
  for (const char* symbol : {kAbiSymbol, kCreateSymbol})
    if (!library_->handle.has(symbol))
      missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  if (!missing.empty())
    throw Error(who + ": library " + path.string() + " does not export " + missing +
                " (is it a hostlm plugin built with HOSTLM_DECLARE_PLUGIN?)");

  const int abi = library_->handle.get<hostlm_plugin_abi_fn>(kAbiSymbol)();
  if (abi != HOSTLM_PLUGIN_ABI_VERSION)
    throw Error(who + ": library " + path.string() + " was built for plugin ABI " +
                std::to_string(abi) + " but this host uses plugin ABI " +
                std::to_string(HOSTLM_PLUGIN_ABI_VERSION) + "; rebuild the plugin");

  try {
    plugin_.reset(library_->handle.get<hostlm_plugin_create_fn>(kCreateSymbol)());
  } catch (const std::exception& e) {
    throw Error(who + ": " + kCreateSymbol + " failed: " + e.what());
  }
  if (!plugin_) throw Error(who + ": " + kCreateSymbol + " returned no plugin");
}

LoadedPlugin::~LoadedPlugin() {
  // The plugin's destructor and vtable live in the library.
  plugin_.reset();
  library_.reset();
}

}  // namespace hostlm::registry
