#include "qccl/codecs/levels.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "qccl/codecs/kernels.h"
#include "qccl/common/errors.h"

namespace qccl {

void encode_levels(std::span<const float> in, std::size_t first, std::int8_t* q, float scale,
                   float norm, int levels, const CounterRng& rng) {
  if (std::isfinite(scale)) {
    kernels::linear_encode_i8(in.data(), q, in.size(), scale, levels, rng.key_low(),
                              rng.key_high(), first);
    return;
  }
  for (std::size_t i = 0; i < in.size(); ++i) {
    const float v = std::abs(in[i]) / norm * static_cast<float>(levels);
    const auto lower = static_cast<int>(v);
    const float u = static_cast<float>(rng.bits32(first + i) >> 8) * 0x1p-24f;
    const int level = std::min(lower + (u < v - static_cast<float>(lower) ? 1 : 0), levels);
    q[i] = static_cast<std::int8_t>(std::signbit(in[i]) ? -level : level);
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
