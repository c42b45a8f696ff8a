// How create_backend chooses and reports backends. These run on every machine: on one with no
// GPU (CI) they check the fallback and the errors; on one with a GPU, that CUDA is chosen.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "cuda_test_support.h"
#include "hostlm/error.h"
#include "hostlm/ops.h"

namespace hostlm {
namespace {

namespace fs = std::filesystem;
using testing::cuda_usable;
using testing::ScopedEnv;

std::string error_of(const std::string& backend) {
  try {
    create_backend(backend);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::optional<fs::path> build_lib_dir() {
  const char* build = std::getenv("HOSTLM_BUILD_DIR");
  if (!build) return std::nullopt;
  return fs::path(build) / "lib";
}

TEST(BackendFactory, CpuIsAlwaysAvailable) { EXPECT_EQ(create_backend("cpu")->name(), "cpu"); }

TEST(BackendFactory, UnknownNameIsAnErrorNamingTheKnownOnes) {
  const std::string message = error_of("tpu");
  EXPECT_NE(message.find("unknown backend 'tpu'"), std::string::npos) << message;
  EXPECT_NE(message.find("cuda"), std::string::npos) << message;
}

TEST(BackendFactory, AutoPicksCudaWhenUsableElseCpu) {
  const bool gpu = cuda_usable();
  EXPECT_EQ(create_backend("auto")->name(), gpu ? "cuda" : "cpu");
  EXPECT_EQ(create_backend("")->name(), gpu ? "cuda" : "cpu");
}

TEST(BackendFactory, CudaWithoutAGpuIsAClearError) {
  if (cuda_usable()) GTEST_SKIP() << "this machine has a usable GPU";
  const std::string message = error_of("cuda");
  EXPECT_NE(message.find("backend 'cuda' is not available"), std::string::npos) << message;
  EXPECT_NE(message.find("--backend cpu"), std::string::npos) << message;
}

// Where the build made libhostlm_cuda.so, it must load; what is missing is then the driver or
// the device, and the error says which.
TEST(BackendFactory, BuiltCudaLibraryLoadsAndNamesWhatIsMissing) {
  const auto lib_dir = build_lib_dir();
  if (!lib_dir || !fs::exists(*lib_dir / "libhostlm_cuda.so"))
    GTEST_SKIP() << "this build has no CUDA backend (no nvcc, or HOSTLM_CUDA=OFF)";
  if (cuda_usable()) GTEST_SKIP() << "this machine has a usable GPU";
  const std::string message = error_of("cuda");
  EXPECT_EQ(message.find("was not found or could not be loaded"), std::string::npos) << message;
  const bool names_cause = message.find("driver") != std::string::npos ||
                           message.find("no CUDA device") != std::string::npos;
  EXPECT_TRUE(names_cause) << message;
}

TEST(BackendFactory, MissingCudaLibraryFallsBackAndIsExplained) {
  const std::string missing = "/nonexistent/hostlm/libhostlm_cuda.so";
  ScopedEnv env("HOSTLM_CUDA_LIBRARY", missing);
  EXPECT_EQ(create_backend("auto")->name(), "cpu");
  const std::string message = error_of("cuda");
  EXPECT_NE(message.find(missing), std::string::npos) << message;
  EXPECT_NE(message.find("built without nvcc"), std::string::npos) << message;
}

TEST(BackendFactory, LibraryThatIsNotACudaBackendIsRefused) {
  const auto lib_dir = build_lib_dir();
  if (!lib_dir || !fs::exists(*lib_dir / "libhostlm.so")) GTEST_SKIP() << "HOSTLM_BUILD_DIR unset";
  const std::string foreign = (*lib_dir / "libhostlm.so").string();
  ScopedEnv env("HOSTLM_CUDA_LIBRARY", foreign);
  EXPECT_EQ(create_backend("auto")->name(), "cpu");
  const std::string message = error_of("cuda");
  EXPECT_NE(message.find("is not a CUDA backend"), std::string::npos) << message;
}

}  // namespace
}  // namespace hostlm
