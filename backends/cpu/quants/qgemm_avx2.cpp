// The AVX2 integer kernels (see qgemm_simd.h).
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
#pragma GCC target("avx2,fma,f16c")

namespace hostlm::cpu::quants {
namespace avx2 {
namespace {
#define HOSTLM_QGEMM_VNNI 0
#include "cpu/quants/qgemm_simd.h"
}  // namespace
}  // namespace avx2

const QGemm* qgemm_avx2(DType type) { return avx2::find_entry(type); }

}  // namespace hostlm::cpu::quants

#pragma GCC pop_options
