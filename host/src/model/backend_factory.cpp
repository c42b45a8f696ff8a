#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cuda/cuda_entry.h"
#include "hostlm/error.h"
#include "hostlm/ops.h"

namespace hostlm {
namespace {
namespace fs = std::filesystem;

// libhostlm_cuda.so is opened at run time rather than linked, so that libhostlm needs no CUDA
// library and the same build runs on machines with and without a GPU.
struct CudaLibrary {
  int (*device_count)(char*, size_t) = nullptr;
  Backend* (*create)(char*, size_t) = nullptr;
};

constexpr const char* kCudaLibraryName = "libhostlm_cuda.so";

// HOSTLM_CUDA_LIBRARY names the library outright; otherwise it is looked for next to the
// object holding this code (libhostlm.so in <build>/lib or <prefix>/lib, or an executable in
// <build>/bin with the libraries in ../lib), then on the loader's search path.
std::vector<std::string> cuda_library_candidates() {
  if (const char* path = std::getenv("HOSTLM_CUDA_LIBRARY"); path && *path) return {path};
  std::vector<std::string> candidates;
  static const int anchor = 0;
  Dl_info info{};
  if (dladdr(&anchor, &info) != 0 && info.dli_fname != nullptr) {
    const fs::path here = fs::path(info.dli_fname).parent_path();
    candidates.push_back((here / kCudaLibraryName).string());
    candidates.push_back((here / ".." / "lib" / kCudaLibraryName).lexically_normal().string());
  }
  candidates.push_back(kCudaLibraryName);
  return candidates;
}

// The CUDA library, or nullopt with the reason in `why`. Successful loads are kept for the
// life of the process (backends made from one hold code in it); failures are retried.
std::optional<CudaLibrary> load_cuda_library(std::string& why) {
  static std::mutex mutex;
  static std::map<std::string, CudaLibrary> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  why.clear();
  for (const std::string& path : cuda_library_candidates()) {
    if (auto it = loaded.find(path); it != loaded.end()) return it->second;
    const bool is_file = path.find('/') != std::string::npos;
    std::error_code ec;
    if (is_file && !fs::exists(path, ec)) {
      why += (why.empty() ? "" : "; ") + path + " does not exist";
      continue;
    }
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* err = dlerror();
      why += (why.empty() ? "" : "; ") + std::string(err ? err : path + ": cannot be loaded");
      continue;
    }
    auto abi = reinterpret_cast<int (*)()>(dlsym(handle, "hostlm_cuda_abi_version"));
    CudaLibrary lib;
    lib.device_count =
        reinterpret_cast<int (*)(char*, size_t)>(dlsym(handle, "hostlm_cuda_device_count"));
    lib.create =
        reinterpret_cast<Backend* (*)(char*, size_t)>(dlsym(handle, "hostlm_cuda_create_backend"));
    if (!abi || !lib.device_count || !lib.create || abi() != HOSTLM_CUDA_ABI_VERSION) {
      why += (why.empty() ? "" : "; ") + path +
             " is not a CUDA backend of this hostlm version (rebuild or reinstall it)";
      dlclose(handle);
      continue;
    }
    loaded.emplace(path, lib);
    return lib;
  }
  return std::nullopt;
}

// A CUDA backend, or null (with `why`) when this machine has no usable CUDA: no library, no
// driver, too old a driver, or no device. A device that exists but fails (out of memory) throws.
std::unique_ptr<Backend> try_cuda(std::string& why) {
  const std::optional<CudaLibrary> lib = load_cuda_library(why);
  if (!lib) {
    why = "the CUDA backend library was not found or could not be loaded (" + why +
          "); this hostlm may have been built without nvcc or with HOSTLM_CUDA=OFF";
    return nullptr;
  }
  char error[1024] = "";
  if (lib->device_count(error, sizeof error) <= 0) {
    why = error;
    return nullptr;
  }
  Backend* backend = lib->create(error, sizeof error);
  if (backend == nullptr) throw Error(std::string("backend 'cuda': ") + error);
  return std::unique_ptr<Backend>(backend);
}

}  // namespace

std::unique_ptr<Backend> create_backend(const std::string& name) {
  if (name == "cpu") return cpu::make_cpu_backend();
  if (name == "cuda" || name == "auto" || name.empty()) {
    std::string why;
    if (std::unique_ptr<Backend> cuda = try_cuda(why)) return cuda;
    if (name == "cuda")
      throw Error("backend 'cuda' is not available: " + why + "; use --backend cpu");
    return cpu::make_cpu_backend();
  }
  throw Error("unknown backend '" + name + "' (known: auto, cpu, cuda)");
}

}  // namespace hostlm
