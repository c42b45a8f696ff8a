// Shared by the CUDA backend tests: a CUDA backend when this machine can run one, else the
// reason, so GPU tests skip visibly on machines without a GPU (CI).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda/state_values.h"
#include "hostlm/error.h"
#include "hostlm/half.h"
#include "hostlm/ops.h"

#ifdef HOSTLM_TEST_CUDART
#include <cuda_runtime_api.h>
#endif

namespace hostlm::testing {

// The kernels' name for a recurrent state's element type (Backend::DeltaRuleShape::state).
inline cuda::StateType state_type_of(DType type) {
  return type == DType::F16    ? cuda::StateType::F16
         : type == DType::BF16 ? cuda::StateType::BF16
                               : cuda::StateType::F32;
}

// Recurrent states of `sequences` sequences stored as sh.state (16-bit values two to a float),
// from random values, and their values back as floats.
inline std::vector<float> stored_states(const Backend::DeltaRuleShape& sh, int64_t sequences,
                                        const std::vector<float>& values) {
  std::vector<float> stored(static_cast<size_t>(sh.state_floats() * sequences));
  for (int64_t i = 0; i < sequences; ++i)
    for (int64_t v = 0; v < sh.state_values(); ++v)
      cuda::state_set(stored.data() + i * sh.state_floats(), v, state_type_of(sh.state),
                      values[static_cast<size_t>(i * sh.state_values() + v)]);
  return stored;
}
inline std::vector<float> state_values(const Backend::DeltaRuleShape& sh,
                                       const std::vector<float>& stored) {
  const int64_t sequences = static_cast<int64_t>(stored.size()) / sh.state_floats();
  std::vector<float> values;
  for (int64_t i = 0; i < sequences; ++i)
    for (int64_t v = 0; v < sh.state_values(); ++v)
      values.push_back(
          cuda::state_get(stored.data() + i * sh.state_floats(), v, state_type_of(sh.state)));
  return values;
}
// CPU and GPU round their own float32 results, which differ in the last bits, to a 16-bit
// state: one unit of its last place (2^-11, 2^-8) apart at most, and twice that later on.
inline double state_tolerance(DType type) {
  return type == DType::F32 ? 1e-5 : type == DType::F16 ? 2e-3 : 1.6e-2;
}

// n floats drawn uniformly from [lo, hi).
inline std::vector<float> uniform_floats(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Every value of `got` within tolerance x (the largest |want|) of `want`; names the worst.
inline void expect_close(const std::vector<float>& want, const std::vector<float>& got,
                         const std::string& what, double tolerance = 1e-5) {
  ASSERT_EQ(want.size(), got.size()) << what;
  double scale = 1e-30, worst = 0;
  size_t worst_at = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, static_cast<double>(std::abs(want[i])));
    const double diff = std::abs(static_cast<double>(want[i]) - got[i]);
    if (!(diff <= worst)) {  // also catches NaN
      worst = diff;
      worst_at = i;
    }
  }
  EXPECT_LE(worst, tolerance * scale) << what << ": worst at " << worst_at << " cpu "
                                      << want[worst_at] << " cuda " << got[worst_at];
}

// Sets (or, with nullopt, unsets) an environment variable for a scope and restores it after:
// the backend reads its path switches when it is created.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name_)) old_ = old;
    if (value)
      ::setenv(name_, value->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The compute capability's major number of the current GPU; 0 where none can be read.
inline int device_major() {
#ifdef HOSTLM_TEST_CUDART
  int device = 0, major = 0;
  if (cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess)
    return major;
  cudaGetLastError();
#endif
  return 0;
}

inline std::unique_ptr<Backend> cuda_backend_or_reason(std::string& why) {
  try {
    return create_backend("cuda");
  } catch (const Error& e) {
    why = e.what();
    return nullptr;
  }
}

// `values` stored as `type` (F32, or F16/BF16 rounded to nearest).
inline std::vector<uint8_t> store_as(DType type, const std::vector<float>& values) {
  std::vector<uint8_t> bytes;
  if (type == DType::F32) {
    bytes.resize(values.size() * 4);
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
  }
  bytes.resize(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t h = type == DType::F16 ? f32_to_f16(values[i]) : f32_to_bf16(values[i]);
    std::memcpy(bytes.data() + 2 * i, &h, 2);
  }
  return bytes;
}

// A rows x cols tensor named "test.weight" over `bytes`.
inline TensorView weight_view(DType type, int64_t rows, int64_t cols,
                              const std::vector<uint8_t>& bytes) {
  TensorView v;
  v.name = "test.weight";
  v.type = type;
  v.shape = {rows, cols};
  v.data = bytes.data();
  v.nbytes = bytes.size();
  return v;
}

// Remembers the named environment variables and puts the caller's values back however the
// test ends, for the tests after it (settings read when a backend is made).
class RestoreEnv {
 public:
  explicit RestoreEnv(std::initializer_list<const char*> names) {
    for (const char* n : names) {
      const char* v = std::getenv(n);
      saved_.emplace_back(n, v ? std::optional<std::string>(v) : std::nullopt);
    }
  }
  RestoreEnv(const RestoreEnv&) = delete;
  RestoreEnv& operator=(const RestoreEnv&) = delete;
  ~RestoreEnv() {
    for (const auto& [n, v] : saved_) v ? setenv(n.c_str(), v->c_str(), 1) : unsetenv(n.c_str());
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// A delta-rule layer's decode input projections (qkv, z, b) with the convolution's decode step
// in the product's epilogue (matmul_same_input_conv1d) against the grouped products followed
// by conv1d_silu_seqs, over the steps of `xs` (the state carries between them): the
// convolution's output and state and the other products' outputs are bit-equal, and with
// `expect_fused` the fused product's own output (qkv) is left unwritten, which shows that it
// was fused. `label` names the case in failures.
inline void expect_conv_in_product_equals_apart(Backend& gpu, const Weight& w_qkv,
                                                const Weight& w_z, const Weight& w_b, int64_t K,
                                                const std::vector<float>& conv_w,
                                                const std::vector<float>& state0,
                                                const std::vector<std::vector<float>>& xs,
                                                bool expect_fused, const std::string& label) {
  const int64_t channels = w_qkv.rows;
  const auto from = [&](Buffer& b, int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    gpu.download(v.data(), b.data(), v.size());
    return v;
  };
  struct Run {
    std::unique_ptr<Buffer> qkv, z, b, conv, state;
  };
  const auto make_run = [&] {
    Run r{gpu.alloc(channels), gpu.alloc(w_z.rows), gpu.alloc(w_b.rows), gpu.alloc(channels),
          gpu.alloc(state0.size())};
    gpu.upload(r.state->data(), state0.data(), state0.size());
    const std::vector<float> nan(static_cast<size_t>(channels), std::nanf(""));
    gpu.upload(r.qkv->data(), nan.data(), nan.size());
    return r;
  };
  Run apart = make_run(), fused = make_run();
  auto xd = gpu.alloc(xs.empty() ? 1 : xs[0].size());
  for (size_t step = 0; step < xs.size(); ++step) {
    gpu.upload(xd->data(), xs[step].data(), xs[step].size());
    for (Run* r : {&apart, &fused}) {
      const MatmulOut outs[] = {
          {&w_qkv, r->qkv->data()}, {&w_z, r->z->data()}, {&w_b, r->b->data()}};
      const SequenceSlice slice{0, 1, static_cast<int64_t>(step), r->state->data(), nullptr};
      if (r == &apart) {
        gpu.matmul_same_input(outs, xd->data(), 1);
        gpu.conv1d_silu_seqs({&slice, 1}, r->qkv->data(), channels, K, conv_w.data(),
                             r->conv->data());
      } else {
        gpu.matmul_same_input_conv1d(outs, xd->data(), 1, {&slice, 1}, channels, K, conv_w.data(),
                                     r->conv->data());
      }
    }
    const std::string what = label + " step " + std::to_string(step);
    for (auto [a, b, n, name] :
         {std::tuple{apart.conv.get(), fused.conv.get(), channels, "conv"},
          {apart.state.get(), fused.state.get(), (K - 1) * channels, "state"},
          {apart.z.get(), fused.z.get(), w_z.rows, "z"},
          {apart.b.get(), fused.b.get(), w_b.rows, "b"}}) {
      const std::vector<float> want = from(*a, n), got = from(*b, n);
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
          << what << ": " << name;
    }
    if (!expect_fused) continue;
    const std::vector<float> left = from(*fused.qkv, channels);
    EXPECT_TRUE(std::all_of(left.begin(), left.end(), [](float v) { return std::isnan(v); }))
        << what << ": the fused product wrote its own output, so it was not fused";
  }
}

inline bool cuda_usable() {
  std::string why;
  return cuda_backend_or_reason(why) != nullptr;
}

}  // namespace hostlm::testing
