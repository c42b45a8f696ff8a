// The AVX-512 VNNI integer kernels on 256-bit vectors (see qgemm_simd.h).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "cpu/quants/blocks.h"
#include "cpu/quants/iq_levels.h"
#include "cpu/quants/qgemm.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,prefer-vector-width=256")

namespace hostlm::cpu::quants {
namespace vnni {
namespace {
#define HOSTLM_QGEMM_VNNI 1
#include "cpu/quants/qgemm_simd.h"
}  // namespace
}  // namespace vnni

const QGemm* qgemm_vnni(DType type) { return vnni::find_entry(type); }

}  // namespace hostlm::cpu::quants

#pragma GCC pop_options
