#include "qccl/codecs/levels.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

#include "qccl/codecs/kernels/element_ops.h"
#include "qccl/codecs/kernels/kernels.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

// Elements per block of the 4-bit paths: even (blocks start on a byte) and
// small enough for the unpacked levels to stay in the L1 cache.
constexpr std::size_t kPackBlock = 4096;

}  // namespace

void encode_levels(std::span<const float> in, std::size_t first, std::int8_t* q, double norm,
                   int levels, const CounterRng& rng) {
  if (norm == 0.0) {
    std::fill(q, q + in.size(), std::int8_t{0});
    return;
  }
  const auto scale = static_cast<float>(levels / norm);
  if (encode_levels_uses_kernel(scale)) {
    kernels::linear_encode_i8(in.data(), q, in.size(), scale, levels, rng.key_low(),
                              rng.key_high(), first);
    return;
  }
  const bool tiny = !std::isfinite(scale);
  const auto norm_f = static_cast<float>(norm);
  for (std::size_t i = 0; i < in.size(); ++i) {
    const double v = tiny ? static_cast<double>(std::abs(in[i]) / norm_f * static_cast<float>(levels))
                          : std::abs(static_cast<double>(in[i])) / norm * levels;
    const auto lower = static_cast<int>(std::min(v, static_cast<double>(levels)));
    const float u = static_cast<float>(rng.bits32(first + i) >> 8) * 0x1p-24f;
    const int level = std::min(lower + (u < v - lower ? 1 : 0), levels);
    q[i] = static_cast<std::int8_t>(std::signbit(in[i]) ? -level : level);
  }
}

bool encode_levels_uses_kernel(float scale) { return std::isfinite(scale) && scale >= FLT_MIN; }

bool decode_levels_uses_kernel(double step) { return std::isfinite(static_cast<float>(step)); }

float saturate_to_fp32(double x) { return element_ops::saturate_wide(x); }

void decode_levels(const std::int8_t* q, float* out, std::size_t n, double step) {
  if (decode_levels_uses_kernel(step)) {
    kernels::linear_decode_i8(q, out, n, static_cast<float>(step));
    return;
  }
  for (std::size_t i = 0; i < n; ++i) out[i] = saturate_to_fp32(q[i] * step);
}

void decode_levels_i4(const std::uint8_t* packed, float* out, std::size_t n, double step) {
  if (decode_levels_uses_kernel(step)) {
    kernels::linear_decode_i4(packed, out, n, static_cast<float>(step));
    return;
  }
  std::int8_t q[kPackBlock];
  for (std::size_t at = 0; at < n; at += kPackBlock) {
    const std::size_t m = std::min(kPackBlock, n - at);
    kernels::unpack_i4(packed + at / 2, q, m);
    decode_levels(q, out + at, m, step);
  }
}

void encode_levels_i4(std::span<const float> in, std::size_t first, std::uint8_t* packed,
                      double norm, int levels, const CounterRng& rng) {
  std::int8_t q[kPackBlock];
  for (std::size_t at = 0; at < in.size(); at += kPackBlock) {
    const std::size_t m = std::min(kPackBlock, in.size() - at);
    encode_levels(in.subspan(at, m), first + at, q, norm, levels, rng);
    kernels::pack_i4(q, packed + at / 2, m);
  }
}

CounterRng reduce_rng(const CodecSettings& settings, std::uint64_t step, const ReduceContext& context) {
  return CounterRng(settings.seed, step, settings.bucket,
                    (static_cast<std::uint64_t>(context.rank) << 16) |
                        static_cast<std::uint64_t>(context.hop),
                    RngStream::reduce);
}

void throw_corrupt_partial_sum(std::string_view codec, const ReduceContext& context,
                               std::string_view bound) {
  throw CommError(std::string(codec) + ": a partial sum at elements " +
                  std::to_string(context.first) + ".." +
                  std::to_string(context.first + context.count) + " " + std::string(bound) +
                  ", which valid input cannot produce (corrupt message?)");
}

void require_chunk_bytes(std::string_view codec, std::size_t got, std::size_t expected,
                         std::size_t count) {
  if (got != expected) {
    throw CommError(std::string(codec) + ": a chunk of " + std::to_string(count) +
                    " elements must be " + std::to_string(expected) + " bytes, got " +
                    std::to_string(got) + " (corrupt or truncated message?)");
  }
}

}  // namespace qccl
