// Reading and writing a recurrent state stored as float32, IEEE half or bfloat16
// (Backend::DeltaRuleShape::state): the delta-rule kernels keep their arithmetic in float32
// and convert at the state's load and store only. Compiles for the device and the host (the
// chunked form's tests run its bodies on the CPU).
//
// Narrowing rounds to nearest even and half saturates, as the CPU backend does
// (f32_to_f16_saturating in hostlm/half.h).
#pragma once
#include <cmath>
#include <cstdint>

#include "cuda/quants/portable.h"

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace hostlm::cuda {

enum class StateType : int32_t { F32 = 0, F16 = 1, BF16 = 2 };

HQ_HD float state_widen(uint16_t bits, StateType type) {
#ifdef __CUDA_ARCH__
  return type == StateType::F16 ? __half2float(__ushort_as_half(bits))
                                : __bfloat162float(__ushort_as_bfloat16(bits));
#else
  return type == StateType::F16 ? f16_to_f32(bits) : bf16_to_f32(bits);
#endif
}

HQ_HD uint16_t state_narrow(float v, StateType type) {
#ifdef __CUDA_ARCH__
  // Half's largest finite value for anything beyond it (NaN stays NaN), as on the host.
  const float s = fabsf(v) > kF16Max ? copysignf(kF16Max, v) : v;
  return type == StateType::F16 ? __half_as_ushort(__float2half_rn(s))
                                : __bfloat16_as_ushort(__float2bfloat16_rn(v));
#else
  return type == StateType::F16 ? f32_to_f16_saturating(v) : f32_to_bf16(v);
#endif
}

#ifdef __CUDA_ARCH__
// Four 16-bit values held in one 8-byte word, to floats and back.
__device__ __forceinline__ void state_widen4(uint2 w, StateType type, float* v) {
  v[0] = state_widen(static_cast<uint16_t>(w.x & 0xffffu), type);
  v[1] = state_widen(static_cast<uint16_t>(w.x >> 16), type);
  v[2] = state_widen(static_cast<uint16_t>(w.y & 0xffffu), type);
  v[3] = state_widen(static_cast<uint16_t>(w.y >> 16), type);
}
__device__ __forceinline__ uint2 state_narrow4(const float* v, StateType type) {
  uint2 w;
  w.x = uint32_t{state_narrow(v[0], type)} | uint32_t{state_narrow(v[1], type)} << 16;
  w.y = uint32_t{state_narrow(v[2], type)} | uint32_t{state_narrow(v[3], type)} << 16;
  return w;
}
#endif

// Element i of a state at `base`.
HQ_HD float state_get(const void* base, int64_t i, StateType type) {
  if (type == StateType::F32) return static_cast<const float*>(base)[i];
  return state_widen(static_cast<const uint16_t*>(base)[i], type);
}

HQ_HD void state_set(void* base, int64_t i, StateType type, float v) {
  if (type == StateType::F32)
    static_cast<float*>(base)[i] = v;
  else
    static_cast<uint16_t*>(base)[i] = state_narrow(v, type);
}

// Elements i .. i + 3 in one load or store: i a multiple of 4 and the state aligned to
// state_vector_align bytes.
HQ_HD int state_vector_align(StateType type) { return type == StateType::F32 ? 16 : 8; }

HQ_HD void state_get4(const void* base, int64_t i, StateType type, float* v) {
#ifdef __CUDA_ARCH__
  if (type == StateType::F32) {
    const float4 f = *reinterpret_cast<const float4*>(static_cast<const float*>(base) + i);
    v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
    return;
  }
  state_widen4(*reinterpret_cast<const uint2*>(static_cast<const uint16_t*>(base) + i), type, v);
#else
  for (int e = 0; e < 4; ++e) v[e] = state_get(base, i + e, type);
#endif
}

HQ_HD void state_set4(void* base, int64_t i, StateType type, const float* v) {
#ifdef __CUDA_ARCH__
  if (type == StateType::F32) {
    *reinterpret_cast<float4*>(static_cast<float*>(base) + i) = make_float4(v[0], v[1], v[2], v[3]);
    return;
  }
  *reinterpret_cast<uint2*>(static_cast<uint16_t*>(base) + i) = state_narrow4(v, type);
#else
  for (int e = 0; e < 4; ++e) state_set(base, i + e, type, v[e]);
#endif
}

}  // namespace hostlm::cuda
