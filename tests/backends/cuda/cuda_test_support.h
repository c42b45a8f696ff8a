// Shared by the CUDA backend tests: a CUDA backend when this machine can run one, else the
// reason, so GPU tests skip visibly on machines without a GPU (CI).
#pragma once
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hostlm/error.h"
#include "hostlm/half.h"
#include "hostlm/ops.h"

#ifdef HOSTLM_TEST_CUDART
#include <cuda_runtime_api.h>
#endif

namespace hostlm::testing {

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

inline bool cuda_usable() {
  std::string why;
  return cuda_backend_or_reason(why) != nullptr;
}

}  // namespace hostlm::testing
