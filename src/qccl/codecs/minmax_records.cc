#include "qccl/codecs/minmax_records.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "qccl/codecs/kernels/element_ops.h"
#include "qccl/codecs/levels.h"
#include "qccl/codecs/packed_indices.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

namespace ops = element_ops;

std::size_t bucket_count(const ElementForm& form, std::size_t count) {
  return (count + form.values_per_range - 1) / form.values_per_range;
}

std::uint8_t* bytes_of(std::span<std::byte> s) { return reinterpret_cast<std::uint8_t*>(s.data()); }
const std::uint8_t* bytes_of(std::span<const std::byte> s) {
  return reinterpret_cast<const std::uint8_t*>(s.data());
}

// The bytes of min-max's chunk of `count` elements: each bucket's range,
// then the indices packed to code_bits bits (MinMaxEncoding's layout).
std::size_t chunk_bytes(const ElementForm& form, std::size_t count) {
  return 2 * sizeof(float) * bucket_count(form, count) +
         (count * static_cast<std::size_t>(form.code_bits) + 7) / 8;
}

}  // namespace

std::size_t minmax_record_bytes(const ElementForm& form, std::size_t count) {
  return ops::record_bytes(count, form.values_per_range);
}

std::size_t minmax_record_offset(const ElementForm& form, std::size_t first) {
  if (first % form.values_per_range != 0) {
    throw Error("min-max records start at a bucket's start, not at element " + std::to_string(first) +
                " of buckets of " + std::to_string(form.values_per_range) + " (a bug in the device "
                "step: report it)");
  }
  return ops::record_range_at(first, form.values_per_range);
}

void encode_minmax_records(const ElementForm& form, std::span<const float> in, std::size_t first,
                           std::span<std::byte> records) {
  const std::size_t per_range = form.values_per_range;
  std::uint8_t* out = bytes_of(records);
  for (std::size_t start = 0; start < in.size(); start += per_range) {
    const std::size_t end = std::min(in.size(), start + per_range);
    std::int32_t lo = ops::order_key(in[start]), hi = lo;
    for (std::size_t i = start; i < end; ++i) {
      lo = ops::smaller(lo, ops::order_key(in[i]));
      hi = ops::larger(hi, ops::order_key(in[i]));
    }
    const float low = ops::from_order_key(lo), high = ops::from_order_key(hi);
    ops::store_float(out + ops::record_range_at(start, per_range), low);
    ops::store_float(out + ops::record_range_at(start, per_range) + 4, high);
    for (std::size_t i = start; i < end; ++i) {
      out[ops::record_index_at(i, per_range)] = ops::minmax_bucket_level(
          in[i], low, high, form.levels, form.lattice, form.lattice_offset,
          ops::random_bits(form.key_low, form.key_high, first + i));
    }
  }
}

void decode_minmax_records(const ElementForm& form, std::span<const std::byte> records,
                           std::span<float> out) {
  const std::size_t stride = minmax_record_bytes(form, out.size());
  const std::uint8_t* all = bytes_of(records);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = ops::mean_in_rank_order(form.ranks, form.divide_by, [&](std::int32_t q) {
      return ops::record_value(all + static_cast<std::size_t>(q) * stride, i, form.values_per_range,
                               form.levels, form.shift);
    });
  }
}

std::size_t minmax_chunk_from_records(const ElementForm& form, std::span<const std::byte> records,
                                      std::size_t count, std::span<std::byte> chunk) {
  const std::size_t per_range = form.values_per_range;
  const std::size_t buckets = bucket_count(form, count);
  const std::uint8_t* in = bytes_of(records);
  std::uint8_t* ranges = bytes_of(chunk);
  std::uint8_t* payload = ranges + 2 * sizeof(float) * buckets;
  std::vector<std::uint8_t> unpacked(form.code_bits == 8 ? 0 : count);
  std::uint8_t* indices = form.code_bits == 8 ? payload : unpacked.data();
  for (std::size_t b = 0; b < buckets; ++b) {
    const std::size_t start = b * per_range;
    const std::size_t n = std::min(per_range, count - start);
    std::memcpy(ranges + 2 * sizeof(float) * b, in + ops::record_range_at(start, per_range), 2 * sizeof(float));
    std::memcpy(indices + start, in + ops::record_index_at(start, per_range), n);
  }
  if (form.code_bits != 8) pack_indices(unpacked, form.code_bits, reinterpret_cast<std::byte*>(payload));
  return chunk_bytes(form, count);
}

void minmax_records_from_chunk(const ElementForm& form, const std::string& codec,
                               std::span<const std::byte> chunk, std::size_t count,
                               std::span<std::byte> records) {
  const std::size_t per_range = form.values_per_range;
  const std::size_t buckets = bucket_count(form, count);
  require_chunk_bytes(codec, chunk.size(), chunk_bytes(form, count), count);
  const std::uint8_t* ranges = bytes_of(chunk);
  const std::uint8_t* payload = ranges + 2 * sizeof(float) * buckets;
  std::vector<std::uint8_t> unpacked(form.code_bits == 8 ? 0 : count);
  if (form.code_bits != 8) {
    unpack_indices(reinterpret_cast<const std::byte*>(payload), form.code_bits, unpacked);
  }
  const std::uint8_t* indices = form.code_bits == 8 ? payload : unpacked.data();
  std::uint8_t* out = bytes_of(records);
  for (std::size_t b = 0; b < buckets; ++b) {
    const float lo = ops::load_float(ranges + 2 * sizeof(float) * b);
    const float hi = ops::load_float(ranges + 2 * sizeof(float) * b + 4);
    if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi) {
      throw CommError(codec + ": bucket range [" + std::to_string(lo) + ", " + std::to_string(hi) +
                      "] is invalid (corrupt message?)");
    }
    const std::size_t start = b * per_range;
    std::memcpy(out + ops::record_range_at(start, per_range), ranges + 2 * sizeof(float) * b, 2 * sizeof(float));
    std::memcpy(out + ops::record_index_at(start, per_range), indices + start, std::min(per_range, count - start));
  }
}

}  // namespace qccl
