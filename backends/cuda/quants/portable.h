// The few device intrinsics the quantized kernels use, with plain C++ equivalents, so that the
// per-lane arithmetic of those kernels (pieces.h) also compiles for the host: the tests run it
// on machines without a GPU against the CPU backend's decoders.
//
// Every function here is exact (integer, bit or exactly rounded operations), so the host and
// device forms give identical results.
#pragma once
#include <cstdint>
#include <cstring>

#include "hostlm/half.h"

#ifdef __CUDACC__
#include <cuda_fp16.h>
#define HQ_HD __host__ __device__ __forceinline__
#else
#define HQ_HD inline
#endif
// Only the device pass knows the pragma; the host compiler would warn about it.
#ifdef __CUDA_ARCH__
#define HQ_UNROLL _Pragma("unroll")
#else
#define HQ_UNROLL
#endif

namespace hostlm::cuda::quants {

// Four little-endian 32-bit words: one 128-bit load.
struct Words4 {
  uint32_t w[4];
};

// Loads of weight bytes that are read once per product: on the device they bypass L1
// allocation (ld.global.nc.L1::no_allocate) so that the reused activations stay cached.
// `p` must be 16-byte aligned. Not volatile: the compiler may hoist and batch these loads,
// which is what keeps enough bytes in flight.
HQ_HD Words4 load_stream16(const uint8_t* p) {
  Words4 r;
#ifdef __CUDA_ARCH__
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(r.w[0]), "=r"(r.w[1]), "=r"(r.w[2]), "=r"(r.w[3])
      : "l"(p));
#else
  std::memcpy(r.w, p, 16);
#endif
  return r;
}

// Plain aligned loads (activations, scales, and weights staged in shared memory): 16, 8, 4
// and 2 bytes.
HQ_HD Words4 load16(const void* p) {
  Words4 r;
#ifdef __CUDA_ARCH__
  const uint4 v = *static_cast<const uint4*>(p);
  r.w[0] = v.x, r.w[1] = v.y, r.w[2] = v.z, r.w[3] = v.w;
#else
  std::memcpy(r.w, p, 16);
#endif
  return r;
}
// A piece's quant bytes: streamed from global memory, or (kStream false) read where a kernel
// staged them, e.g. in shared memory.
template <bool kStream>
HQ_HD Words4 load_main16(const uint8_t* p) {
  if constexpr (kStream)
    return load_stream16(p);
  else
    return load16(p);
}
HQ_HD uint64_t load8(const void* p) {
#ifdef __CUDA_ARCH__
  return *static_cast<const unsigned long long*>(p);
#else
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
#endif
}
HQ_HD uint32_t load4(const void* p) {
#ifdef __CUDA_ARCH__
  return *static_cast<const uint32_t*>(p);
#else
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
#endif
}
HQ_HD uint32_t load2(const void* p) {
#ifdef __CUDA_ARCH__
  return *static_cast<const uint16_t*>(p);
#else
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
#endif
}

// IEEE half (low 16 bits of `bits`) to float: exact.
HQ_HD float half_to_float(uint32_t bits) {
#ifdef __CUDA_ARCH__
  return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
#else
  return f16_to_f32(static_cast<uint16_t>(bits));
#endif
}

// Sum of the four products of signed bytes of a and b, plus c.
HQ_HD int dp4a(uint32_t a, uint32_t b, int c) {
#ifdef __CUDA_ARCH__
  return __dp4a(static_cast<int>(a), static_cast<int>(b), c);
#else
  for (int k = 0; k < 4; ++k)
    c += static_cast<int8_t>(static_cast<uint8_t>(a >> (8 * k))) *
         static_cast<int8_t>(static_cast<uint8_t>(b >> (8 * k)));
  return c;
#endif
}

// Byte k of the result is byte (s >> 4k) & 7 of the eight bytes {hi:lo} (lo is bytes 0-3).
// Callers keep bit 3 of each selector nibble clear, so no sign-replication mode is involved.
HQ_HD uint32_t byte_perm(uint32_t lo, uint32_t hi, uint32_t s) {
#ifdef __CUDA_ARCH__
  return __byte_perm(lo, hi, s);
#else
  const uint64_t bytes = (uint64_t{hi} << 32) | lo;
  uint32_t r = 0;
  for (int k = 0; k < 4; ++k)
    r |= static_cast<uint32_t>((bytes >> (8 * ((s >> (4 * k)) & 7))) & 0xff) << (8 * k);
  return r;
#endif
}

// Byte k of the result (k < 4) is bit k of v (v < 16) in bit 0: the four partial products of
// v * 0x00204081 sit 7 bits apart and never overlap, so no carry crosses a byte.
HQ_HD uint32_t spread4(uint32_t v) { return (v * 0x00204081u) & 0x01010101u; }

// Byte-wise a - b and a + b, each byte mod 256 (no borrow or carry crosses a byte).
HQ_HD uint32_t vsub4(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
  return __vsub4(a, b);
#else
  uint32_t r = 0;
  for (int k = 0; k < 4; ++k) r |= (((a >> (8 * k)) - (b >> (8 * k))) & 0xffu) << (8 * k);
  return r;
#endif
}
HQ_HD uint32_t vadd4(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
  return __vadd4(a, b);
#else
  uint32_t r = 0;
  for (int k = 0; k < 4; ++k) r |= (((a >> (8 * k)) + (b >> (8 * k))) & 0xffu) << (8 * k);
  return r;
#endif
}

// An E8M0 byte as gguf reads it (ggml_e8m0_to_fp32_half): 2^(e - 128), a subnormal for e < 2.
HQ_HD float e8m0_half_to_float(uint32_t e) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(e < 2 ? 0x00200000u << e : (e - 1) << 23);
#else
  return e8m0_half_to_f32(static_cast<uint8_t>(e));  // hostlm/half.h
#endif
}

// 1 if `v` has an odd number of set bits, else 0.
HQ_HD uint32_t parity(uint32_t v) {
#ifdef __CUDA_ARCH__
  return static_cast<uint32_t>(__popc(v)) & 1u;
#else
  v ^= v >> 16;
  v ^= v >> 8;
  v ^= v >> 4;
  return (0x6996u >> (v & 15u)) & 1u;
#endif
}

HQ_HD int8_t byte_of(uint32_t word, int k) {
  return static_cast<int8_t>(static_cast<uint8_t>(word >> (8 * k)));
}

}  // namespace hostlm::cuda::quants
