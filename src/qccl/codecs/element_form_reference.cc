#include "qccl/codecs/element_form_reference.h"

#include <cstring>

#include "qccl/codecs/kernels/element_ops.h"
#include "qccl/codecs/levels.h"
#include "qccl/codecs/minmax_records.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

namespace ops = element_ops;
using Code = ElementForm::Code;

std::uint32_t read_header(std::span<const std::byte> chunk) {
  std::uint32_t k;
  std::memcpy(&k, chunk.data(), 4);
  return k;
}
void write_header(std::span<std::byte> chunk, std::uint32_t k) { std::memcpy(chunk.data(), &k, 4); }

template <class T>
T* codes(std::span<std::byte> chunk, const ElementForm& form) {
  return reinterpret_cast<T*>(chunk.data() + form.header_bytes);
}
template <class T>
const T* codes(std::span<const std::byte> chunk, const ElementForm& form) {
  return reinterpret_cast<const T*>(chunk.data() + form.header_bytes);
}

// Summed integer codes: accum's element i plus incoming's, and whether the
// sum lies within ±form.limit (n·s or n·c).
// int64 sums that overflow are outside too.
template <class Int>
bool add_within(const ElementForm& form, std::span<const std::byte> incoming,
                std::span<std::byte> accum, std::size_t i) {
  Int* acc = codes<Int>(accum, form);
  std::int64_t sum;
  const bool overflow = __builtin_add_overflow(std::int64_t{acc[i]}, std::int64_t{codes<Int>(incoming, form)[i]}, &sum);
  acc[i] = static_cast<Int>(sum);
  return !overflow && ops::sum_within(sum, form.limit);
}

std::int8_t packed_level(const std::uint8_t* packed, std::size_t i) {
  return i % 2 ? ops::high_nibble(packed[i / 2]) : ops::low_nibble(packed[i / 2]);
}

// Values of codes (no header) of the vector's elements [first, first +
// out.size()): the complete mean's, or (`own`) one rank's own encoding's.
void decode_values(const ElementForm& form, std::span<const std::byte> payload, std::size_t first,
                   std::span<float> out, bool own) {
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(payload.data());
  const float step = own ? form.own_step : form.mean_step;
  const std::size_t origin = form.vector_first + first;
  for_each_form_block(form, origin, out.size(), [&](const IntegerBlock* block, std::size_t offset, std::size_t count) {
    for (std::size_t i = offset; i < offset + count; ++i) {
      switch (form.code) {
        case Code::linear_i8_summed:
        case Code::linear_i8_averaged: out[i] = ops::level_value(static_cast<std::int8_t>(bytes[i]), step); break;
        case Code::linear_i4_averaged: out[i] = ops::level_value(packed_level(bytes, i), step); break;
        case Code::exp_i8: out[i] = ops::exp_value(bytes[i], form.headroom, step); break;
        case Code::fp16:
          out[i] = ops::fp16_value(reinterpret_cast<const std::uint16_t*>(payload.data())[i]) * step;
          break;
        case Code::fp32_summed: {
          const float v = reinterpret_cast<const float*>(payload.data())[i];
          out[i] = own ? v * step : ops::fp32_mean_value(v, static_cast<float>(form.ranks), form.wide_mean_step);
          break;
        }
        case Code::int_i8_summed:
        case Code::int_i32_summed: {
          const std::int32_t v = form.code == Code::int_i8_summed
                                     ? static_cast<std::int8_t>(bytes[i])
                                     : reinterpret_cast<const std::int32_t*>(payload.data())[i];
          out[i] = own ? saturate_to_fp32(static_cast<double>(v) * block->own_step)
                       : ops::level_value(v, block->fast_mean_step());
          break;
        }
        case Code::int_i64_summed: {
          const std::int64_t v = reinterpret_cast<const std::int64_t*>(payload.data())[i];
          out[i] = ops::wide_level_value(v, own ? block->own_step : block->mean_step);
          break;
        }
        case Code::minmax_gathered: break;  // decode_minmax_records
      }
    }
  });
}

// The int64 wire's integers (IntSGD §2 in fp64, int_rounding.h), block by
// block at each block's fp64 scale, drawing 64 random bits per element.
void encode_wide_integers(const ElementForm& form, std::span<const float> in, std::size_t first,
                          std::int64_t* out) {
  const auto limit = static_cast<double>(form.clip);
  for_each_form_block(form, first, in.size(), [&](const IntegerBlock* block, std::size_t offset, std::size_t count) {
    for (std::size_t i = offset; i < offset + count; ++i) {
      const std::uint64_t random = ops::random_bits64(form.key_low, form.key_high, first + i);
      out[i] = ops::wide_rounded_integer(in[i], block->alpha, limit, form.random_rounding, random).level;
    }
  });
}

// The chunk-level functions combine chunks in transit; a gathered form's
// chunks are converted (minmax_records.h), never combined.
void require_combined(const ElementForm& form, const char* what) {
  if (form.code == Code::minmax_gathered) {
    throw InvalidArgument(std::string(what) + ": a min-max form's chunks are gathered, not combined "
                          "in transit; convert them with minmax_records.h (a bug in the caller)");
  }
}

}  // namespace

std::size_t form_payload_bytes(const ElementForm& form, std::size_t count) {
  switch (form.code) {
    case Code::linear_i4_averaged: return (count + 1) / 2;
    case Code::fp16: return 2 * count;
    case Code::fp32_summed:
    case Code::int_i32_summed: return 4 * count;
    case Code::int_i64_summed: return 8 * count;
    case Code::minmax_gathered: return static_cast<std::size_t>(form.ranks) * minmax_record_bytes(form, count);
    default: return count;
  }
}

// first is even for packed codes, a bucket's start for min-max.
std::size_t form_payload_offset(const ElementForm& form, std::size_t first) {
  if (form.code == Code::minmax_gathered) {
    return static_cast<std::size_t>(form.ranks) * minmax_record_offset(form, first);
  }
  return form_payload_bytes(form, first);
}

std::size_t form_chunk_bytes(const ElementForm& form, std::size_t count) {
  return form.header_bytes + form_payload_bytes(form, count);
}

bool form_is_gathered(const ElementForm& form) { return form.code == Code::minmax_gathered; }

std::size_t gathered_chunk_from_codes(const ElementForm& form, std::span<const std::byte> codes,
                                      std::size_t count, std::span<std::byte> chunk) {
  return minmax_chunk_from_records(form, codes, count, chunk);
}

void gathered_codes_from_chunk(const ElementForm& form, const std::string& codec,
                               std::span<const std::byte> chunk, std::size_t count,
                               std::span<std::byte> codes) {
  minmax_records_from_chunk(form, codec, chunk, count, codes);
}

void encode_payload_by_form(const ElementForm& form, std::span<const float> in, std::size_t first,
                            std::span<std::byte> payload) {
  if (form.code == Code::minmax_gathered) {
    encode_minmax_records(form, in, first, payload);
    return;
  }
  const float below_scale = float_from_bits(static_cast<std::uint32_t>(127 + form.levels - 1) << 23);
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::uint32_t random = ops::random_bits(form.key_low, form.key_high, first + i);
    switch (form.code) {
      case Code::linear_i8_summed:
      case Code::linear_i8_averaged:
        reinterpret_cast<std::int8_t*>(payload.data())[i] = ops::linear_level(in[i], form.scale, form.levels, random);
        break;
      case Code::linear_i4_averaged: {
        auto* packed = reinterpret_cast<std::uint8_t*>(payload.data());
        const std::int8_t level = ops::linear_level(in[i], form.scale, form.levels, random);
        packed[i / 2] = i % 2 ? ops::nibble_pair(ops::low_nibble(packed[i / 2]), level) : ops::nibble_pair(level, 0);
        break;
      }
      case Code::exp_i8:
        reinterpret_cast<std::uint8_t*>(payload.data())[i] =
            ops::exp_code(in[i], form.scale, form.headroom, form.levels, below_scale, random);
        break;
      case Code::fp16:
        reinterpret_cast<std::uint16_t*>(payload.data())[i] = ops::fp16_bits(in[i] * form.scale);
        break;
      case Code::fp32_summed: reinterpret_cast<float*>(payload.data())[i] = in[i] * form.scale; break;
      case Code::int_i8_summed:
      case Code::int_i32_summed:
      case Code::int_i64_summed:  // below, block by block
      case Code::minmax_gathered: break;  // above
    }
  }
  if (form.code == Code::int_i64_summed) {
    encode_wide_integers(form, in, first, reinterpret_cast<std::int64_t*>(payload.data()));
    return;
  }
  if (form.code != Code::int_i8_summed && form.code != Code::int_i32_summed) return;
  const auto clip = static_cast<std::int32_t>(form.clip);
  for_each_form_block(form, first, in.size(), [&](const IntegerBlock* block, std::size_t offset, std::size_t count) {
    for (std::size_t i = offset; i < offset + count; ++i) {
      const std::uint32_t random = ops::random_bits(form.key_low, form.key_high, first + i);
      const std::int32_t level =
          ops::rounded_integer(in[i], block->fast_alpha(), clip, form.random_rounding, random).level;
      if (form.code == Code::int_i8_summed) {
        reinterpret_cast<std::int8_t*>(payload.data())[i] = static_cast<std::int8_t>(level);
      } else {
        reinterpret_cast<std::int32_t*>(payload.data())[i] = level;
      }
    }
  });
}

std::size_t encode_by_form(const ElementForm& form, std::span<const float> in, std::size_t first,
                           std::span<std::byte> out) {
  require_combined(form, "encode_by_form");
  if (form.header_bytes > 0) write_header(out, 1);
  encode_payload_by_form(form, in, first, out.subspan(form.header_bytes));
  return form_chunk_bytes(form, in.size());
}

bool codes_within_bounds(const ElementForm& form, std::span<const std::byte> payload) {
  const auto within = [&](const auto* values, std::size_t count) {
    bool inside = true;
    for (std::size_t i = 0; i < count; ++i) inside &= ops::sum_within(values[i], form.limit);
    return inside;
  };
  switch (form.code) {
    case Code::int_i8_summed:
      return within(reinterpret_cast<const std::int8_t*>(payload.data()), payload.size());
    case Code::int_i32_summed:
      return within(reinterpret_cast<const std::int32_t*>(payload.data()), payload.size() / 4);
    case Code::int_i64_summed:
      return within(reinterpret_cast<const std::int64_t*>(payload.data()), payload.size() / 8);
    default: return true;
  }
}

bool reduce_by_form(const ElementForm& form, std::span<const std::byte> incoming,
                    std::span<std::byte> accum, const ReduceContext& context) {
  require_combined(form, "reduce_by_form");
  const CounterRng rng = reduce_rng(CodecSettings{form.seed, form.bucket}, form.step, context);
  const std::uint32_t ka = form.header_bytes > 0 ? read_header(accum) : 0;
  const std::uint32_t kb = form.header_bytes > 0 ? read_header(incoming) : 0;
  const float inverse_k = 1.0f / static_cast<float>(ka + kb);
  bool valid = true;
  for (std::size_t i = 0; i < context.count; ++i) {
    const std::uint32_t random = ops::random_bits(rng.key_low(), rng.key_high(), context.first + i);
    switch (form.code) {
      case Code::linear_i8_summed:
      case Code::int_i8_summed: valid &= add_within<std::int8_t>(form, incoming, accum, i); break;
      case Code::int_i32_summed: valid &= add_within<std::int32_t>(form, incoming, accum, i); break;
      case Code::int_i64_summed: valid &= add_within<std::int64_t>(form, incoming, accum, i); break;
      case Code::linear_i8_averaged: {
        auto* acc = codes<std::int8_t>(accum, form);
        acc[i] = ops::averaged_level(acc[i], codes<std::int8_t>(incoming, form)[i], static_cast<std::int32_t>(ka),
                                     static_cast<std::int32_t>(kb), inverse_k, random);
        break;
      }
      case Code::linear_i4_averaged: {
        auto* acc = codes<std::uint8_t>(accum, form);
        const std::int8_t level = ops::averaged_level(packed_level(acc, i), packed_level(codes<std::uint8_t>(incoming, form), i),
                                                      static_cast<std::int32_t>(ka), static_cast<std::int32_t>(kb),
                                                      inverse_k, random);
        acc[i / 2] = i % 2 ? ops::nibble_pair(ops::low_nibble(acc[i / 2]), level)
                           : ops::nibble_pair(level, ops::high_nibble(acc[i / 2]));
        break;
      }
      case Code::exp_i8: {
        auto* acc = codes<std::uint8_t>(accum, form);
        const auto sum = ops::exp_sum(acc[i], codes<std::uint8_t>(incoming, form)[i], random);
        valid &= sum.valid;
        acc[i] = sum.code;
        break;
      }
      case Code::fp16: {
        auto* acc = codes<std::uint16_t>(accum, form);
        acc[i] = ops::fp16_bits(ops::fp16_value(acc[i]) + ops::fp16_value(codes<std::uint16_t>(incoming, form)[i]));
        break;
      }
      case Code::fp32_summed: codes<float>(accum, form)[i] += codes<float>(incoming, form)[i]; break;
      case Code::minmax_gathered: break;  // refused above
    }
  }
  if (form.header_bytes > 0) write_header(accum, ka + kb);
  return valid;
}

void decode_payload_by_form(const ElementForm& form, std::span<const std::byte> payload,
                            std::size_t first, std::span<float> out) {
  if (form.code == Code::minmax_gathered) {
    decode_minmax_records(form, payload, out);
    return;
  }
  decode_values(form, payload, first, out, false);
}

void decode_by_form(const ElementForm& form, std::span<const std::byte> in, std::size_t first,
                    std::span<float> out) {
  require_combined(form, "decode_by_form");
  decode_values(form, in.subspan(form.header_bytes), first, out, false);
}

void decode_contribution_by_form(const ElementForm& form, std::span<const std::byte> in,
                                 std::size_t first, std::span<float> out) {
  require_combined(form, "decode_contribution_by_form");
  decode_values(form, in.subspan(form.header_bytes), first, out, true);
}

}  // namespace qccl
