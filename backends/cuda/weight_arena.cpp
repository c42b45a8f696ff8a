#include "cuda/weight_arena.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "hostlm/error.h"

namespace hostlm::cuda {

// The driver's virtual memory calls, looked up through the runtime so that the backend does
// not link libcuda (the build machines have no driver) and loads wherever cudart does.
struct WeightArena::Driver {
  decltype(&cuDeviceGet) device_get = nullptr;
  decltype(&cuDeviceGetAttribute) attribute = nullptr;
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&cuMemAddressReserve) reserve = nullptr;
  decltype(&cuMemAddressFree) address_free = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) set_access = nullptr;
  CUmemAllocationProp prop{};
  CUmemAccessDesc access{};

  template <class Fn>
  static bool find(const char* name, Fn& fn) {
    void* p = nullptr;
#if CUDART_VERSION >= 12050
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    const cudaError_t status =
        cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &found);
#else  // toolkits before 12.5 have only the unversioned lookup (deprecated since)
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSuccess;
    const cudaError_t status = cudaGetDriverEntryPoint(name, &p, cudaEnableDefault);
#endif
    if (status != cudaSuccess || found != cudaDriverEntryPointSuccess || p == nullptr) {
      (void)cudaGetLastError();
      return false;
    }
    fn = reinterpret_cast<Fn>(p);
    return true;
  }

  bool find_all() {
    return find("cuDeviceGet", device_get) && find("cuDeviceGetAttribute", attribute) &&
           find("cuMemGetAllocationGranularity", granularity) &&
           find("cuMemAddressReserve", reserve) && find("cuMemAddressFree", address_free) &&
           find("cuMemCreate", create) && find("cuMemRelease", release) && find("cuMemMap", map) &&
           find("cuMemUnmap", unmap) && find("cuMemSetAccess", set_access);
  }
};

namespace {

// HOSTLM_CUDA_ALLOC_LOG=1 lists allocations (as device_memory.cpp does for cudaMalloc);
// HOSTLM_CUDA_WEIGHT_ARENA=0 gives every weight its own cudaMalloc, for comparison.
bool log_on() {
  const char* env = std::getenv("HOSTLM_CUDA_ALLOC_LOG");
  return env && env[0] == '1';
}

bool arena_on() {
  const char* env = std::getenv("HOSTLM_CUDA_WEIGHT_ARENA");
  return env == nullptr || env[0] != '0';
}

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

std::string mib(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

constexpr size_t kAlign = 256;

}  // namespace

WeightArena::WeightArena(AllocFn fallback) : fallback_(fallback) {
  if (arena_on() && !open_range()) {
    delete driver_;
    driver_ = nullptr;
    base_ = 0;
  }
}

// The range spans the GPU's whole memory (address space, not memory), so that it never has to
// move: weights already handed out keep their addresses.
bool WeightArena::open_range() {
  driver_ = new Driver;
  Driver& d = *driver_;
  if (!d.find_all() || cudaGetDevice(&device_) != cudaSuccess) return false;
  CUdevice device = 0;
  int supported = 0;
  if (d.device_get(&device, device_) != CUDA_SUCCESS ||
      d.attribute(&supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device) !=
          CUDA_SUCCESS ||
      !supported)
    return false;
  d.prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  d.prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  d.prop.location.id = device;
  d.access.location = d.prop.location;
  d.access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  size_t free_bytes = 0, total_bytes = 0;
  if (d.granularity(&granule_, &d.prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) != CUDA_SUCCESS ||
      granule_ == 0 || cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess)
    return false;
  reserved_ = round_up(total_bytes, granule_);
  CUdeviceptr base = 0;
  if (d.reserve(&base, reserved_, 0, 0, 0) != CUDA_SUCCESS) return false;
  base_ = base;
  return true;
}

WeightArena::~WeightArena() {
  // Weights may still be read by queued work; unmapping does not wait for it as cudaFree does.
  cudaDeviceSynchronize();
  for (void* p : fallback_blocks_) cudaFree(p);
  if (base_ != 0) {
    for (const auto& [offset, size] : mapped_) driver_->unmap(base_ + offset, size);
    driver_->address_free(base_, reserved_);
  }
  delete driver_;
}

void WeightArena::grow_to(size_t end, const std::string& what) {
  const size_t size = round_up(end - backed_, granule_);
  Driver& d = *driver_;
  CUmemGenericAllocationHandle handle{};
  const CUresult created = d.create(&handle, size, &d.prop, 0);
  if (created != CUDA_SUCCESS) {
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    if (created == CUDA_ERROR_OUT_OF_MEMORY)
      throw Error("CUDA out of memory: " + what + " needs " + mib(size) + " more, " +
                  mib(free_bytes) + " free of " + mib(total_bytes) + " on the GPU");
    throw Error("CUDA error " + std::to_string(static_cast<int>(created)) + " allocating " +
                mib(size) + " for " + what);
  }
  const CUdeviceptr at = base_ + backed_;
  CUresult status = d.map(at, size, 0, handle, 0);
  // The mapping holds the memory from here on; unmapping frees it.
  d.release(handle);
  if (status == CUDA_SUCCESS) {
    status = d.set_access(at, size, &d.access, 1);
    if (status != CUDA_SUCCESS) d.unmap(at, size);
  }
  if (status != CUDA_SUCCESS)
    throw Error("CUDA error " + std::to_string(static_cast<int>(status)) + " mapping " + mib(size) +
                " for " + what);
  mapped_.emplace_back(backed_, size);
  backed_ += size;
  if (log_on()) std::fprintf(stderr, "cuda weight map\t%zu\t%s\n", size, what.c_str());
}

void* WeightArena::allocate(size_t bytes, const std::string& what) {
  if (base_ == 0) {
    void* p = fallback_(bytes, what);
    fallback_blocks_.push_back(p);
    return p;
  }
  const size_t offset = round_up(used_, kAlign);
  const size_t end = offset + std::max<size_t>(bytes, 1);
  if (end > reserved_) {
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    throw Error("CUDA out of memory: " + what + " needs " + mib(bytes) + ", " + mib(free_bytes) +
                " free of " + mib(total_bytes) + " on the GPU");
  }
  if (end > backed_) grow_to(end, what);
  used_ = end;
  if (log_on()) std::fprintf(stderr, "cuda weight\t%zu\t%s\n", bytes, what.c_str());
  return reinterpret_cast<void*>(static_cast<uintptr_t>(base_ + offset));
}

}  // namespace hostlm::cuda
