// Min-max codes on device data (ElementForm::Code::minmax_gathered): the
// host reference of the bucket records a device makes and decodes
// (element_ops.h: record_bytes), and the conversion between records and
// the chunks min-max sends (quantizers/minmax.h: [fp32 min, fp32 max] per
// bucket, then the level indices, `bits` bits each). Records keep one
// byte per index, so the device never packs bits; the host packs a chunk
// as it sends it and unpacks a received one. Chunks start at a bucket's
// start (the encoding's granularity), and so do the ranges of records
// these functions are given.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "qccl/collectives/element_form.h"

namespace qccl {

// One rank's records of `count` elements; the offset of element `first`'s
// bucket (first a bucket's start).
std::size_t minmax_record_bytes(const ElementForm& form, std::size_t count);
std::size_t minmax_record_offset(const ElementForm& form, std::size_t first);
// The records of `in`, the step's elements [first, first + in.size()),
// in[0] a bucket's start: each bucket's range, then its indices, drawing
// with the element's counter (MinMaxEncoding's bytes).
void encode_minmax_records(const ElementForm& form, std::span<const float> in, std::size_t first,
                           std::span<std::byte> records);
// `form.ranks` ranks' records of out.size() elements, one rank's after the
// other, decoded and summed in rank order and divided by form.divide_by.
void decode_minmax_records(const ElementForm& form, std::span<const std::byte> records,
                           std::span<float> out);
// The chunk min-max sends for `count` elements from their records; returns
// its bytes.
std::size_t minmax_chunk_from_records(const ElementForm& form, std::span<const std::byte> records,
                                      std::size_t count, std::span<std::byte> chunk);
// A received chunk's records; a chunk of the wrong size or with a range
// that is not finite and ordered is refused with CommError naming `codec`.
void minmax_records_from_chunk(const ElementForm& form, const std::string& codec,
                               std::span<const std::byte> chunk, std::size_t count,
                               std::span<std::byte> records);

}  // namespace qccl
