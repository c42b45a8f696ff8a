// Scalar conversions between float32 and the 16-bit float formats of stored weights
// (IEEE half and bfloat16), rounding to nearest even as PyTorch and ggml do, and MXFP4's
// 8-bit E8M0 scale.
#pragma once
#include <cstdint>
#include <cstring>

namespace hostlm {

inline float bf16_to_f32(uint16_t bits) {
  const uint32_t u = uint32_t{bits} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even, NaN kept quiet (the rounding PyTorch and ggml use).
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t u;
  if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      u = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (mant << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even with overflow to infinity and gradual underflow.
inline uint16_t f32_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {  // result is subnormal or zero
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14 + (113 - e) - ... aligns to the 2^-24 unit
    const uint32_t half = 1u << (shift - 1);
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = abs + 0xfffu + ((abs >> 13) & 1u) - (0x38000000u - 0x00000000u);
  return static_cast<uint16_t>(sign | (r >> 13));
}

// As f32_to_f16, but beyond half's range the largest finite value instead of infinity (NaN
// stays NaN): how a 16-bit recurrent state is stored, where one infinite entry would turn the
// next token's products into NaNs.
inline constexpr float kF16Max = 65504.f;
inline uint16_t f32_to_f16_saturating(float f) {
  return f32_to_f16(f > kF16Max ? kF16Max : f < -kF16Max ? -kF16Max : f);
}

// An E8M0 byte as ggml and gguf read it for MXFP4 (ggml_e8m0_to_fp32_half): 2^(e - 128),
// a subnormal float for e < 2. Exact.
inline float e8m0_half_to_f32(uint8_t e) {
  const uint32_t bits = e < 2 ? uint32_t{0x00200000} << e : static_cast<uint32_t>(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace hostlm
