#include "qccl/codecs/quantizers/int_rounding.h"

#include <cmath>
#include <limits>
#include <string>

#include "qccl/codecs/kernels/element_ops.h"
#include "qccl/common/errors.h"

namespace qccl {

std::string_view to_string(IntRounding rounding) {
  return rounding == IntRounding::random ? "random" : "deterministic";
}

std::string_view to_string(IntWire wire) {
  switch (wire) {
    case IntWire::int8: return "int8";
    case IntWire::int32: return "int32";
    case IntWire::int64: return "int64";
  }
  return "?";
}

int wire_bits(IntWire wire) {
  switch (wire) {
    case IntWire::int8: return 8;
    case IntWire::int32: return 32;
    case IntWire::int64: return 64;
  }
  return 0;
}

std::size_t wire_bytes_per_element(IntWire wire) {
  return static_cast<std::size_t>(wire_bits(wire) / 8);
}

std::int64_t per_rank_clip(IntWire wire, int ranks) {
  if (ranks < 1) throw InvalidArgument("integer rounding needs at least one rank");
  const int bits = wire_bits(wire);
  const std::int64_t largest =
      bits == 64 ? std::numeric_limits<std::int64_t>::max() : (std::int64_t{1} << (bits - 1)) - 1;
  std::int64_t clip = largest / ranks;
  if (clip < 1) {
    throw InvalidArgument("the " + std::string(to_string(wire)) + " wire cannot sum " +
                          std::to_string(ranks) + " ranks without overflow (at most " +
                          std::to_string(largest) + "); use wire=int32");
  }
  // Beyond 2^53 not every integer is a double: take the largest that is,
  // at most c (converting a double of 2^63 back would overflow).
  const double nearest = static_cast<double>(clip);
  const bool rounded_up = nearest >= 0x1p63 || static_cast<std::int64_t>(nearest) > clip;
  return static_cast<std::int64_t>(rounded_up ? std::nextafter(nearest, 0.0) : nearest);
}

// Element by element with element_ops.h's wide_rounded_integer, the body
// a device step of the int64 wire runs too.
template <class In, class Out>
std::uint64_t round_scaled(std::span<const In> x, double alpha, IntRounding rounding,
                           std::int64_t clip, const CounterRng& rng, std::size_t first, Out* out) {
  const double limit = static_cast<double>(clip);
  const bool random = rounding == IntRounding::random;
  std::uint64_t clipped = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const auto r = element_ops::wide_rounded_integer(static_cast<double>(x[i]), alpha, limit, random,
                                                     random ? rng.bits64(first + i) : 0);
    clipped += r.clipped ? 1 : 0;
    out[i] = static_cast<Out>(r.level);
  }
  return clipped;
}

#define QCCL_ROUND_SCALED(In, Out)                                                        \
  template std::uint64_t round_scaled<In, Out>(std::span<const In>, double, IntRounding, \
                                               std::int64_t, const CounterRng&,           \
                                               std::size_t, Out*);
QCCL_ROUND_SCALED(float, std::int8_t)
QCCL_ROUND_SCALED(float, std::int32_t)
QCCL_ROUND_SCALED(float, std::int64_t)
QCCL_ROUND_SCALED(double, std::int8_t)
QCCL_ROUND_SCALED(double, std::int32_t)
QCCL_ROUND_SCALED(double, std::int64_t)
#undef QCCL_ROUND_SCALED

}  // namespace qccl
