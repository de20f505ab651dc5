#include "qccl/codecs/gathered_staging.h"

#include "qccl/codecs/element_form_reference.h"
#include "qccl/common/errors.h"

namespace qccl {

GatheredStaging::GatheredStaging(Encoding& inner, const ElementForm& form,
                                 const ElementForm& result_form, DeviceVector& input,
                                 std::span<const std::byte> codes, DeviceVector& output,
                                 std::span<std::byte> result, StagedVectors where)
    : inner_(inner), form_(form), output_form_(result_form), input_(input), codes_(codes),
      output_(output), result_(result), where_(where) {
  form_.ranks = 1;
  output_form_.vector_first = where.output_first;
}

std::size_t GatheredStaging::encode(std::span<const float> in, std::size_t first,
                                    std::span<std::byte> out) {
  const std::size_t at = first - where_.input_first;
  const std::size_t offset = form_payload_offset(form_, at), bytes = form_payload_bytes(form_, in.size());
  if (first < where_.input_first || offset + bytes > codes_.size()) {
    throw Error(name() + ": a chunk of elements [" + std::to_string(first) + ", " +
                std::to_string(first + in.size()) + ") to send lies outside the input, which "
                "starts at " + std::to_string(where_.input_first) + " (a bug in the collective: "
                "report it)");
  }
  input_.codes_ready(at, in.size());
  return gathered_chunk_from_codes(form_, codes_.subspan(offset, bytes), in.size(), out);
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
  const std::size_t at = first - where_.output_first;
  const std::size_t bytes = form_payload_bytes(form_, count);
  const std::size_t offset = form_payload_offset(output_form_, at) + static_cast<std::size_t>(next_rank_) * bytes;
  if (first < where_.output_first || offset + bytes > result_.size()) {
    throw Error(name() + ": a gathered chunk of elements [" + std::to_string(first) + ", " +
                std::to_string(first + count) + ") lies outside the output, which starts at " +
                std::to_string(where_.output_first) + " (a bug in the collective: report it)");
  }
  gathered_codes_from_chunk(form_, name(), in, count, result_.subspan(offset, bytes));
  if (++next_rank_ == output_form_.ranks) output_.decode_range(output_form_, at, count);
}

void GatheredStaging::decode_contribution(std::span<const std::byte>, std::size_t, std::span<float>) {
  throw InvalidArgument(name() + ": a step on device data returns no own contribution (error "
                        "feedback needs one): run it on host data");
}

}  // namespace qccl
