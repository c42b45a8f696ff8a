// Most tests here hold 16-bit prefill products to the CPU's float32 arithmetic (1e-5 to 1e-4
// of the logit spread), so this binary runs the backend's exact mode unless the environment
// already says otherwise. sixteen_bit_prefill_test.cpp switches it off around what it checks:
// the default, with activations rounded to the weights' 16-bit type.
#include <cstdlib>

namespace {

const bool exact_mode_set = [] {
  setenv("HOSTLM_CUDA_EXACT_16BIT", "1", /*overwrite=*/0);
  return true;
}();

}  // namespace
