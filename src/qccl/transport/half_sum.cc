#include "qccl/transport/half_sum.h"

#include <immintrin.h>

namespace qccl {
namespace {

// Called through GCC's dispatcher below (a caller in another file would bind
// to the default version directly).
__attribute__((target("default"))) void add_f16_impl(_Float16* acc, const _Float16* in, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    acc[i] = static_cast<_Float16>(static_cast<float>(acc[i]) + static_cast<float>(in[i]));
  }
}

__attribute__((target("avx2,f16c"))) void add_f16_impl(_Float16* acc, const _Float16* in,
                                                   std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(acc + i)));
    const __m256 b = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(acc + i),
                     _mm256_cvtps_ph(_mm256_add_ps(a, b), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < n; ++i) {
    acc[i] = static_cast<_Float16>(static_cast<float>(acc[i]) + static_cast<float>(in[i]));
  }
}

}  // namespace

void add_f16(_Float16* acc, const _Float16* in, std::size_t n) { add_f16_impl(acc, in, n); }

}  // namespace qccl
