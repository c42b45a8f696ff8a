// Prefill's half-precision products through cuBLAS, outside the backend: how fast the call
// the backend makes (cublasGemmEx, half in, float out) runs on each Qwen3.5 weight shape, and
// how far from it cuBLASLt's other algorithms for the same problem are. Decides whether the
// backend should pick algorithms itself.
// Usage: bench_cuda_gemm [TOKENS] (default 2048). Prints TFLOP/s (2 * rows * cols * T / s).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  return false;
}
bool ok(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return true;
  std::fprintf(stderr, "%s: %s\n", what, cublasGetStatusString(s));
  return false;
}

struct Shape {
  int rows, cols;
  const char* name;
};

// Mean seconds of one call over `reps`, after two warm-up calls.
template <class Call>
double time_calls(Call&& call, int reps, cudaStream_t stream) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  call();
  call();
  cudaEventRecord(a, stream);
  for (int i = 0; i < reps; ++i) call();
  cudaEventRecord(b, stream);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / 1e3 / reps;
}

}  // namespace

int main(int argc, char** argv) {
  const int T = argc > 1 ? std::atoi(argv[1]) : 2048;
  if (T < 1) return 2;
  const Shape shapes[] = {
      {8192, 4096, "9B gdn qkv / attn q"}, {4096, 4096, "9B square"},
      {12288, 4096, "9B ffn gate/up"},     {24576, 4096, "9B gate+up"},
      {4096, 12288, "9B ffn down"},        {1024, 4096, "9B attn k/v"},
      {17408, 5120, "27B ffn gate/up"},    {5120, 17408, "27B ffn down"},
      {10240, 5120, "27B gdn qkv"},
  };
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  cublasHandle_t blas;
  cublasLtHandle_t lt;
  if (!ok(cublasCreate(&blas), "cublasCreate") || !ok(cublasLtCreate(&lt), "cublasLtCreate"))
    return 1;
  cublasSetStream(blas, stream);
  const size_t workspace_bytes = size_t{32} << 20;
  void* workspace = nullptr;
  if (!ok(cudaMalloc(&workspace, workspace_bytes), "workspace")) return 1;
  cublasSetWorkspace(blas, workspace, workspace_bytes);

  int max_rows = 0, max_cols = 0;
  size_t w_elems = 0;
  for (const Shape& s : shapes) {
    max_rows = std::max(max_rows, s.rows);
    max_cols = std::max(max_cols, s.cols);
    w_elems = std::max(w_elems, size_t{1} * s.rows * s.cols);
  }
  std::vector<__half> host(std::max(w_elems, size_t{1} * T * max_cols));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.f, 0.02f);
  for (auto& h : host) h = __float2half(normal(rng));
  __half *w = nullptr, *x = nullptr;
  float* y = nullptr;
  if (!ok(cudaMalloc(&w, w_elems * 2), "w") || !ok(cudaMalloc(&x, size_t{2} * T * max_cols), "x") ||
      !ok(cudaMalloc(&y, size_t{4} * T * max_rows), "y"))
    return 1;
  cudaMemcpy(w, host.data(), w_elems * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(x, host.data(), size_t{2} * T * max_cols, cudaMemcpyHostToDevice);

  const float one = 1.f, zero = 0.f;
  std::printf("T=%d  TFLOP/s: gemmex (backend's call) | lt heuristic #0 | lt best of N (index)\n",
              T);
  for (const Shape& s : shapes) {
    const double flop = 2.0 * s.rows * s.cols * T;
    const int reps = std::max(3, static_cast<int>(2e12 / flop));
    // The backend's call: column-major Y^T[rows, T] = W^T * X^T, W stored [cols, rows].
    auto gemmex = [&] {
      cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, s.rows, T, s.cols, &one, w, CUDA_R_16F, s.cols,
                   x, CUDA_R_16F, s.cols, &zero, y, CUDA_R_32F, s.rows, CUBLAS_COMPUTE_32F,
                   CUBLAS_GEMM_DEFAULT);
    };
    // A call that fails would time nothing: check one before timing.
    if (!ok(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, s.rows, T, s.cols, &one, w, CUDA_R_16F,
                         s.cols, x, CUDA_R_16F, s.cols, &zero, y, CUDA_R_32F, s.rows,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx"))
      return 1;
    const double t_ex = time_calls(gemmex, reps, stream);

    cublasLtMatmulDesc_t op;
    cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, s.cols, s.rows, s.cols);
    cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, s.cols, T, s.cols);
    cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, s.rows, T, s.rows);
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                         &workspace_bytes, sizeof workspace_bytes);
    cublasLtMatmulHeuristicResult_t found[32];
    int n_found = 0;
    if (!ok(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 32, found, &n_found),
            "cublasLtMatmulAlgoGetHeuristic"))
      return 1;
    double t_first = 0, t_best = 1e9;
    int best = -1;
    for (int i = 0; i < n_found; ++i) {
      if (found[i].state != CUBLAS_STATUS_SUCCESS ||
          cublasLtMatmul(lt, op, &one, w, la, x, lb, &zero, y, lc, y, lc, &found[i].algo, workspace,
                         workspace_bytes, stream) != CUBLAS_STATUS_SUCCESS)
        continue;  // an algorithm that cannot run this problem is not timed
      auto call = [&] {
        cublasLtMatmul(lt, op, &one, w, la, x, lb, &zero, y, lc, y, lc, &found[i].algo, workspace,
                       workspace_bytes, stream);
      };
      const double t = time_calls(call, reps, stream);
      if (i == 0) t_first = t;
      if (t < t_best) t_best = t, best = i;
    }
    std::printf("%-18s %6d x %-6d %7.1f | %7.1f | %7.1f (%d of %d)\n", s.name, s.rows, s.cols,
                flop / t_ex / 1e12, t_first > 0 ? flop / t_first / 1e12 : 0.0, flop / t_best / 1e12,
                best, n_found);
    std::fflush(stdout);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
  }
  return ok(cudaStreamSynchronize(stream), "sync") ? 0 : 1;
}
