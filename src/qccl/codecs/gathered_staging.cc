#include "qccl/codecs/gathered_staging.h"

#include <algorithm>
#include <vector>

#include "qccl/codecs/element_form_reference.h"
#include "qccl/codecs/kernels/element_ops.h"
#include "qccl/common/errors.h"

namespace qccl {

GatheredStaging::GatheredStaging(Encoding& inner, const ElementForm& form,
                                 const ElementForm& result_form, DeviceVector& input,
                                 std::span<const std::byte> codes, DeviceVector& output,
                                 std::span<std::byte> result, StagedVectors where)
    : inner_(inner), form_(form), output_form_(result_form), input_(input), codes_(codes),
      output_(output), result_(result), where_(where),
      one_range_(inner.granularity() < form.values_per_range) {
  form_.ranks = 1;
  output_form_.vector_first = where.output_first;
}

namespace {

constexpr std::size_t kRangeBytes = 2 * sizeof(float);

// The form of one chunk of `count` elements cut from one range per vector:
// a single bucket of its own.
ElementForm one_bucket_of(ElementForm form, std::size_t count) {
  form.values_per_range = std::max<std::size_t>(count, 1);
  return form;
}

}  // namespace

std::size_t GatheredStaging::encode(std::span<const float> in, std::size_t first,
                                    std::span<std::byte> out) {
  const std::size_t at = first - where_.input_first;
  // One range per vector: the vector's range, then the chunk's indices.
  const std::size_t offset = one_range_ ? kRangeBytes + at : form_payload_offset(form_, at);
  const std::size_t bytes = one_range_ ? in.size() : form_payload_bytes(form_, in.size());
  if (first < where_.input_first || offset + bytes > codes_.size()) {
    throw Error(name() + ": a chunk of elements [" + std::to_string(first) + ", " +
                std::to_string(first + in.size()) + ") to send lies outside the input, which "
                "starts at " + std::to_string(where_.input_first) + " (a bug in the collective: "
                "report it)");
  }
  input_.codes_ready(at, in.size());
  if (!one_range_) return gathered_chunk_from_codes(form_, codes_.subspan(offset, bytes), in.size(), out);
  std::vector<std::byte> records(kRangeBytes + in.size());
  std::copy_n(codes_.begin(), kRangeBytes, records.begin());
  const auto indices = codes_.subspan(offset, bytes);
  std::copy(indices.begin(), indices.end(), records.begin() + kRangeBytes);
  return gathered_chunk_from_codes(one_bucket_of(form_, in.size()), records, in.size(), out);
}

void GatheredStaging::decode(std::span<const std::byte> in, std::size_t first, std::span<float> out) {
  chunk_first_ = first;
  next_rank_ = 0;
  keep(in, first, out.size());
}

void GatheredStaging::decode_add(std::span<const std::byte> in, std::size_t first,
                                 std::span<float> out, std::span<float>) {
  if (first != chunk_first_ || next_rank_ == 0 || next_rank_ >= output_form_.ranks) {
    throw Error(name() + ": a chunk of elements from " + std::to_string(first) + " was added "
                "outside its ranks' sequence (a bug in the gathering collective: report it)");
  }
  keep(in, first, out.size());
}

// Rank next_rank_'s codes of the chunk go to their place among the
// result's; the last rank's start the chunk's decoding.
void GatheredStaging::keep(std::span<const std::byte> in, std::size_t first, std::size_t count) {
  const auto outside = [&] {
    return Error(name() + ": a gathered chunk of elements [" + std::to_string(first) + ", " +
                 std::to_string(first + count) + ") lies outside the output, which starts at " +
                 std::to_string(where_.output_first) + " (a bug in the collective: report it)");
  };
  if (first < where_.output_first) throw outside();
  const std::size_t at = first - where_.output_first;
  if (one_range_) {
    keep_one_range(in, at, count);
    return;
  }
  const std::size_t bytes = form_payload_bytes(form_, count);
  const std::size_t offset = form_payload_offset(output_form_, at) + static_cast<std::size_t>(next_rank_) * bytes;
  if (offset + bytes > result_.size()) throw outside();
  gathered_codes_from_chunk(form_, name(), in, count, result_.subspan(offset, bytes));
  if (++next_rank_ == output_form_.ranks) {
    kept_ += count;
    output_.decode_range(output_form_, at, count);
  }
}

// Rank next_rank_'s records of the whole output lie one rank's after the
// other (output_form_'s layout: its bucket the encoded vector's length, so
// one range per rank — per shard for an allgather): the chunk's range goes
// to its bucket's range, its indices to theirs. The same rank sends the
// same range in every chunk: one that differs is refused as corrupt (a
// host rank would decode each chunk by its own range).
void GatheredStaging::keep_one_range(std::span<const std::byte> in, std::size_t at, std::size_t count) {
  const std::size_t per_range = output_form_.values_per_range;
  const std::size_t rank_bytes = form_payload_bytes(form_, output_.size());
  const std::size_t base = static_cast<std::size_t>(next_rank_) * rank_bytes;
  const std::size_t range_at = base + element_ops::record_range_at(at, per_range);
  const std::size_t indices_at = base + element_ops::record_index_at(at, per_range);
  if (at + count > output_.size() || (count > 0 && (at % per_range) + count > per_range) ||
      indices_at + count > result_.size()) {
    throw Error(name() + ": a gathered chunk of output elements [" + std::to_string(at) + ", " +
                std::to_string(at + count) + ") lies outside the output or across its ranges "
                "(a bug in the collective: report it)");
  }
  std::vector<std::byte> records(kRangeBytes + count);
  gathered_codes_from_chunk(one_bucket_of(form_, count), name(), in, count, records);
  const std::size_t ranges_per_rank = (output_.size() + per_range - 1) / per_range;
  range_set_.resize(static_cast<std::size_t>(output_form_.ranks) * ranges_per_rank);
  const std::size_t slot = static_cast<std::size_t>(next_rank_) * ranges_per_rank + at / per_range;
  const auto range = result_.begin() + static_cast<std::ptrdiff_t>(range_at);
  if (range_set_[slot] && !std::equal(records.begin(), records.begin() + kRangeBytes, range)) {
    throw CommError(name() + ": rank " + std::to_string(next_rank_) + "'s chunks of one vector "
                    "carry different ranges (corrupt message?)");
  }
  range_set_[slot] = true;
  std::copy_n(records.begin(), kRangeBytes, range);
  std::copy(records.begin() + kRangeBytes, records.end(),
            result_.begin() + static_cast<std::ptrdiff_t>(indices_at));
  if (++next_rank_ < output_form_.ranks) return;
  kept_ += count;
  if (kept_ == output_.size()) output_.decode_range(output_form_, 0, output_.size());
}

void GatheredStaging::decode_contribution(std::span<const std::byte>, std::size_t, std::span<float>) {
  throw InvalidArgument(name() + ": a step on device data returns no own contribution (error "
                        "feedback needs one): run it on host data");
}

}  // namespace qccl
