// The chunked delta rule's kernels and launches; the arithmetic is in delta_chunked.h, shared
// with the host tests.
#include <map>
#include <mutex>

#include "cuda/delta_chunked.h"
#include "kernels.h"
#include "launch.cuh"

namespace hostlm::cuda {
namespace {

static_assert(kDeltaChunkedMaxDk == chunked::kMaxDk && kDeltaChunkedTokens == chunked::kC,
              "one limit for the backend and the kernels");

struct DeviceBlock {
  __device__ int thread() const { return static_cast<int>(threadIdx.x); }
  __device__ void sync() const { __syncthreads(); }
};

__global__ void __launch_bounds__(chunked::kThreads)
    chunked_prep_kernel(const chunked::Args a, const chunked::Window w) {
  pdl_begin();
  extern __shared__ __align__(16) float sm[];
  chunked::prep_chunk(DeviceBlock{}, a, w, static_cast<int>(blockIdx.x),
                      static_cast<int>(blockIdx.y), sm);
}

template <bool kStaged>
__global__ void __launch_bounds__(chunked::kThreads)
    chunked_scan_kernel(const chunked::Args a, const chunked::Window w) {
  pdl_begin();
  extern __shared__ __align__(16) float sm[];
  chunked::scan_columns<kStaged>(DeviceBlock{}, a, w, static_cast<int>(blockIdx.x),
                                 static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.z), sm);
}

// The shared memory a block may have on the current device, found once per device; both
// kernels take more than the default 48 KiB at dk = 128, so they are allowed all of it.
struct Limits {
  cudaError_t status = cudaSuccess;
  int optin = 0;
};

const Limits& device_limits() {
  static std::mutex mutex;
  static std::map<int, Limits> done;
  static const Limits none{cudaErrorNoDevice, 0};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return none;
  }
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = done.find(device); it != done.end()) return it->second;
  Limits l;
  l.status = cudaDeviceGetAttribute(&l.optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  for (const void* kernel : {reinterpret_cast<const void*>(chunked_prep_kernel),
                             reinterpret_cast<const void*>(chunked_scan_kernel<true>),
                             reinterpret_cast<const void*>(chunked_scan_kernel<false>)})
    if (l.status == cudaSuccess)
      l.status = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, l.optin);
  if (l.status != cudaSuccess) {
    cudaGetLastError();
    l.optin = 0;
  }
  return done[device] = l;
}

}  // namespace

bool delta_chunked_fits(int64_t dk) {
  if (dk < 1 || dk > kDeltaChunkedMaxDk) return false;
  const int optin = device_limits().optin;
  const int d = static_cast<int>(dk);
  return chunked::prep_floats(d) * 4 <= optin && chunked::scan_floats(d, false) * 4 <= optin;
}

size_t delta_chunked_slot_floats(int64_t n_v_heads) {
  return static_cast<size_t>(n_v_heads) * chunked::kSlotFloats;
}

cudaError_t gated_delta_rule_chunked(const RecurrentSeqs& seqs, const float* qkv,
                                     const float* alpha, const float* beta_raw, const float* a_neg,
                                     const float* dt_bias, int64_t n_k_heads, int64_t n_v_heads,
                                     int64_t dk, int64_t dv, float* out, float* scratch,
                                     size_t scratch_floats, bool stage, cudaStream_t stream,
                                     StateType state_type) {
  if (dk < 1 || dk > kDeltaChunkedMaxDk || n_k_heads < 1 || n_v_heads < 1 || n_v_heads > 65535 ||
      dv < 1 || dv > int64_t{65535} * chunked::kCols || seqs.n > kRecurrentSeqsPerLaunch)
    return cudaErrorInvalidValue;
  if (seqs.n == 0) return cudaSuccess;
  const Limits& limits = device_limits();
  if (limits.status != cudaSuccess) return limits.status;
  const chunked::Args args{qkv,
                           alpha,
                           beta_raw,
                           a_neg,
                           dt_bias,
                           static_cast<int>(n_k_heads),
                           static_cast<int>(n_v_heads),
                           static_cast<int>(dk),
                           static_cast<int>(dv),
                           out,
                           scratch,
                           state_type};
  const size_t slots = scratch_floats / delta_chunked_slot_floats(n_v_heads);
  const int capacity = static_cast<int>(slots < (1u << 30) ? slots : (1u << 30));
  const size_t prep_bytes = static_cast<size_t>(chunked::prep_floats(args.dk)) * 4;
  const bool staged = stage && chunked::scan_floats(args.dk, true) * 4 <= limits.optin;
  const size_t scan_bytes = static_cast<size_t>(chunked::scan_floats(args.dk, staged)) * 4;
  const auto scan = staged ? chunked_scan_kernel<true> : chunked_scan_kernel<false>;
  const unsigned heads = static_cast<unsigned>(n_v_heads);
  const unsigned col_blocks = static_cast<unsigned>((dv + chunked::kCols - 1) / chunked::kCols);
  const bool ok = chunked::for_each_window(
      seqs.T, seqs.row, seqs.state, seqs.n, capacity, [&](const chunked::Window& w) {
        launch_kernel(chunked_prep_kernel, dim3(static_cast<unsigned>(w.slots), heads),
                      chunked::kThreads, prep_bytes, stream, args, w);
        launch_kernel(scan, dim3(col_blocks, heads, static_cast<unsigned>(w.n)), chunked::kThreads,
                      scan_bytes, stream, args, w);
      });
  if (!ok) return cudaErrorInvalidValue;  // scratch for less than one chunk of every head
  return cudaGetLastError();
}

}  // namespace hostlm::cuda
