#include "cuda/op_profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hostlm::cuda {
namespace {

constexpr size_t kFlushEvery = 8192;  // event pairs held before adding them up

}  // namespace

OpProfile::OpProfile(cudaStream_t stream) : stream_(stream) {
  const char* env = std::getenv("HOSTLM_CUDA_PROFILE");
  enabled_ = env != nullptr && *env != '\0' && std::strcmp(env, "0") != 0;
  detailed_ = enabled_ && std::strcmp(env, "2") == 0;
}

const char* OpProfile::label(const char* op, const std::string& detail) {
  return labels_.insert(std::string(op) + " " + detail).first->c_str();
}

OpProfile::~OpProfile() {
  if (!enabled_) return;
  flush();
  float wall_ms = 0;
  if (first_ && last_) {
    cudaEventSynchronize(last_);
    cudaEventElapsedTime(&wall_ms, first_, last_);
  }
  std::vector<std::pair<std::string, Totals>> rows(totals_.begin(), totals_.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.gpu_ms > b.second.gpu_ms; });
  double gpu = 0, host = 0, first_gpu = 0;
  for (const auto& [op, t] : rows) {
    gpu += t.gpu_ms;
    host += t.host_ms;
    first_gpu += t.first_gpu_ms;
  }
  std::fprintf(stderr,
               "\nCUDA op profile (HOSTLM_CUDA_PROFILE): wall %.1f ms from first op to last; "
               "each row's first call apart (kernel loading)\n",
               static_cast<double>(wall_ms));
  std::fprintf(stderr, "%-40s %9s %11s %7s %11s %9s %9s %11s\n", "op", "calls", "gpu ms", "gpu %",
               "host ms", "gpu us", "host us", "1st gpu ms");
  for (const auto& [op, t] : rows) {
    const double later = static_cast<double>(std::max(t.calls - 1, 1LL));
    std::fprintf(stderr, "%-40s %9lld %11.2f %6.1f%% %11.2f %9.2f %9.2f %11.2f\n", op.c_str(),
                 t.calls, t.gpu_ms, 100.0 * t.gpu_ms / std::max(gpu, 1e-9), t.host_ms,
                 1000.0 * t.gpu_ms / later, 1000.0 * t.host_ms / later, t.first_gpu_ms);
  }
  std::fprintf(stderr, "%-40s %9s %11.2f %7s %11.2f %9s %9s %11.2f\n", "total", "", gpu, "", host,
               "", "", first_gpu);
  for (cudaEvent_t e : free_) cudaEventDestroy(e);
  if (first_) cudaEventDestroy(first_);
}

cudaEvent_t OpProfile::take_event() {
  if (free_.empty()) {
    cudaEvent_t e = nullptr;
    cudaEventCreate(&e);
    return e;
  }
  cudaEvent_t e = free_.back();
  free_.pop_back();
  return e;
}

void OpProfile::record(const char* op, cudaEvent_t begin, double host_ms) {
  cudaEvent_t end = take_event();
  cudaEventRecord(end, stream_);
  Totals& t = totals_[op];
  recorded_.push_back({op, begin, end, t.calls == 0});
  if (t.calls++ > 0) t.host_ms += host_ms;
  last_ = end;
  if (recorded_.size() >= kFlushEvery) flush();
}

void OpProfile::flush() {
  if (recorded_.empty()) return;
  cudaEventSynchronize(recorded_.back().end);
  for (const Recorded& r : recorded_) {
    float ms = 0;
    cudaEventElapsedTime(&ms, r.begin, r.end);
    Totals& t = totals_[r.op];
    (r.first ? t.first_gpu_ms : t.gpu_ms) += ms;
    free_.push_back(r.begin);
    if (r.end != last_) free_.push_back(r.end);  // the last stays for the wall time
  }
  recorded_.clear();
}

OpProfile::Scope::Scope(OpProfile* profile, const char* op) : profile_(profile), op_(op) {
  if (!profile_) return;
  host_begin_ = std::chrono::steady_clock::now();
  begin_ = profile_->take_event();
  cudaEventRecord(begin_, profile_->stream_);
  if (!profile_->first_) {
    cudaEventCreate(&profile_->first_);
    cudaEventRecord(profile_->first_, profile_->stream_);
  }
}

OpProfile::Scope::~Scope() {
  if (!profile_) return;
  const double host_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - host_begin_)
          .count();
  profile_->record(op_, begin_, host_ms);
}

}  // namespace hostlm::cuda
