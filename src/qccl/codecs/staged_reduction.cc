#include "qccl/codecs/staged_reduction.h"

#include <cstdint>
#include <cstring>

#include "qccl/codecs/element_form_reference.h"
#include "qccl/codecs/levels.h"
#include "qccl/common/errors.h"

namespace qccl {

std::size_t StagedReduction::encode(std::span<const float> in, std::size_t first,
                                    std::span<std::byte> out) {
  if (form_.header_bytes > 0) {
    const std::uint32_t one_rank = 1;
    std::memcpy(out.data(), &one_rank, sizeof one_rank);
  }
  const std::size_t bytes = form_payload_bytes(form_, in.size());
  const std::size_t at = first - where_.input_first;
  if (first < where_.input_first || form_payload_offset(form_, at) + bytes > codes_.size()) {
    throw Error(name() + ": a chunk of elements [" + std::to_string(first) + ", " +
                std::to_string(first + in.size()) + ") to send lies outside the input, which "
                "starts at " + std::to_string(where_.input_first) + " (a bug in the collective: "
                "report it)");
  }
  input_.codes_ready(at, in.size());
  std::memcpy(out.data() + form_.header_bytes, codes_.data() + form_payload_offset(form_, at), bytes);
  return form_.header_bytes + bytes;
}

void StagedReduction::decode(std::span<const std::byte> in, std::size_t first, std::span<float> out) {
  const std::size_t bytes = form_payload_bytes(form_, out.size());
  require_chunk_bytes(name(), in.size(), form_.header_bytes + bytes, out.size());
  if (form_.header_bytes > 0) {
    std::uint32_t averaged;
    std::memcpy(&averaged, in.data(), sizeof averaged);
    if (averaged != static_cast<std::uint32_t>(form_.ranks)) {
      throw CommError(name() + ": a decoded chunk averages " + std::to_string(averaged) + " of " +
                      std::to_string(form_.ranks) + " ranks (incomplete or corrupt aggregation)");
    }
  }
  const std::size_t at = first - where_.output_first;
  if (first < where_.output_first || form_payload_offset(form_, at) + bytes > result_.size()) {
    throw Error(name() + ": a finished chunk of elements [" + std::to_string(first) + ", " +
                std::to_string(first + out.size()) + ") lies outside the output, which starts at " +
                std::to_string(where_.output_first) + " (a bug in the collective: report it)");
  }
  const auto payload = in.subspan(form_.header_bytes, bytes);
  if (!codes_within_bounds(form_, payload)) {
    throw CommError(name() + ": a finished chunk of elements [" + std::to_string(first) + ", " +
                    std::to_string(first + out.size()) + ") holds a sum beyond n·c = " +
                    std::to_string(form_.limit) + ", which valid input cannot produce (corrupt "
                    "message?)");
  }
  std::memcpy(result_.data() + form_payload_offset(form_, at), payload.data(), bytes);
  output_.decode_range(output_form_, at, out.size());
}

void StagedReduction::decode_contribution(std::span<const std::byte>, std::size_t, std::span<float>) {
  throw InvalidArgument(name() + ": a step on device data returns no own contribution (error "
                        "feedback needs one): run it on host data");
}

}  // namespace qccl
