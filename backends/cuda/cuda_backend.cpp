// The CUDA backend's life and memory: setting up the stream, cuBLAS and the options, tearing
// them down (with the reports HOSTLM_CUDA_PROFILE and HOSTLM_CUDA_GRAPH_STATS ask for),
// weights uploaded at load time, activation buffers. The class and the files that hold its
// other members: cuda_backend.h.
#include "cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "cuda/check.h"
#include "cuda/device_memory.h"
#include "hostlm/error.h"

namespace hostlm::cuda {

namespace {
// The handle of an F32, F16 or BF16 tensor, its data still to be placed; other types that no
// CUDA path computes with are refused by name.
Weight plain_weight(const TensorView& view) {
  if (view.type != DType::F32 && view.type != DType::F16 && view.type != DType::BF16)
    throw Error("tensor '" + view.name + "' has type " + std::string(dtype_name(view.type)) +
                ", which the CUDA backend cannot compute with (it takes f32, f16, bf16, q4_0, "
                "q4_1, q5_0, q5_1, q8_0, q2_K to q6_K, iq1_s, iq1_m, iq2_xxs, iq2_xs, iq2_s, "
                "iq3_xxs, iq3_s, iq4_nl, iq4_xs, tq1_0, tq2_0 and mxfp4)");
  Weight w;
  w.type = view.type;
  w.cols = view.cols();
  w.rows = view.rows();
  w.row_bytes = view.nbytes / static_cast<size_t>(std::max<int64_t>(1, w.rows));
  return w;
}

}  // namespace

CudaBackend::CudaBackend() {
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream creation");
  check(cublasCreate(&cublas_), "cublasCreate");
  check(cublasSetStream(cublas_, stream_), "cublasSetStream");
  // A workspace of its own, so that cuBLAS never allocates inside a captured step.
  cublas_workspace_ = device_alloc(options_.cublas_workspace_bytes, "the cuBLAS workspace");
  check(cublasSetWorkspace(cublas_, cublas_workspace_, options_.cublas_workspace_bytes),
        "cublasSetWorkspace");
  weights_ = std::make_unique<WeightArena>(device_alloc);
  quant_ = std::make_unique<quants::QuantMatmul>(stream_, cublas_, device_alloc, *weights_);
  profile_ = std::make_unique<OpProfile>(stream_);
  gemv16_ring_ = gemv16_ring_from_env();
  if (options_.graph_stats != '\0') graph_stats_.enable(options_.graph_stats);
}

CudaBackend::~CudaBackend() {
  profile_.reset();  // prints its table, if on, while the stream lives
  if (graph_stats_.on) {
    collect_replay_time();
    graph_stats_.report();
    graph_stats_.destroy_events();
  }
  abort_step();
  cudaStreamSynchronize(stream_);
  for (RecordedStep& r : recorded_steps_)
    if (r.exec) cudaGraphExecDestroy(r.exec);
  for (void* p : retired_) cudaFree(p);
  for (void* p : host_weights_) cudaFreeHost(p);
  cudaFree(dequant_);
  cudaFree(attention_scratch_);
  cudaFree(best_scratch_);
  cudaFreeHost(best_host_);
  cublasDestroy(cublas_);
  cudaFree(cublas_workspace_);
  cudaStreamDestroy(stream_);
}

Weight CudaBackend::load_weight(const TensorView& view) {
  if (quants::QuantMatmul::supports(view.type)) return quant_->load(view);
  Weight w = plain_weight(view);
  void* device = weights_->allocate(view.nbytes, "tensor '" + view.name + "'");
  check(cudaMemcpy(device, view.data, view.nbytes, cudaMemcpyHostToDevice), "weight upload");
  w.data = device;
  return w;
}

Weight CudaBackend::load_embedding_table(const TensorView& view) {
  if (quants::QuantMatmul::supports(view.type)) return quant_->load_host(view);
  Weight w = plain_weight(view);
  void* host = nullptr;
  check(cudaHostAlloc(&host, view.nbytes, cudaHostAllocMapped | cudaHostAllocWriteCombined),
        ("pinned host memory for tensor '" + view.name + "'").c_str());
  host_weights_.push_back(host);
  std::memcpy(host, view.data, view.nbytes);
  check(cudaHostGetDevicePointer(&w.data, host, 0), "mapping a host tensor");
  return w;
}

std::unique_ptr<Buffer> CudaBackend::alloc(size_t n) {
  return std::make_unique<DeviceBuffer>(n, stream_);
}

bool CudaBackend::device_memory(size_t& used, size_t& total) {
  size_t free_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  used = total - free_bytes;
  return true;
}

}  // namespace hostlm::cuda
