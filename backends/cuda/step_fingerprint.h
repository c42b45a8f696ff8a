// What a decode step asked of the backend, reduced to one number: every op's kind and the
// arguments that end up in its launches (device pointers, shapes, scalars), in call order.
// Two steps with equal fingerprints launch the same kernels with the same arguments; only
// the values they upload differ. That is the condition for replaying a recorded CUDA graph
// instead of recording the step again (CudaBackend::begin_step).
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace hostlm::cuda {

class StepFingerprint {
 public:
  void reset() {
    hash_ = kOffset;
    ops_ = 0;
  }
  // One op: its kind and its scalar or pointer arguments.
  template <typename... Args>
  void op(int kind, const Args&... args) {
    ++ops_;
    add(kind);
    (add(args), ...);
  }
  // A value of at most 8 bytes (pointer, integer, float, double, enum).
  template <typename T>
  void add(const T& value) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8);
    uint64_t word = 0;
    std::memcpy(&word, &value, sizeof(T));
    hash_ = (hash_ ^ word) * kPrime;
  }
  bool operator==(const StepFingerprint&) const = default;
  uint64_t ops() const { return ops_; }
  uint64_t hash() const { return hash_; }

 private:
  static constexpr uint64_t kOffset = 14695981039346656037ull, kPrime = 1099511628211ull;
  uint64_t hash_ = kOffset;
  uint64_t ops_ = 0;
};

}  // namespace hostlm::cuda
