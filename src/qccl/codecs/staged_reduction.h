// The Reduction a device step hands to the collective (codec.h,
// Codec::allreduce_mean on a DeviceVector): the step's own reduction for
// combining chunks in transit, but with every rank's codes made on the
// device. Its encode() cuts a chunk out of the whole vector's codes
// (adding the chunk header the real encoding writes) once the device says
// that chunk's codes are on the host, and its decode() keeps a finished
// chunk's codes and starts the device decoding that chunk, instead of
// computing fp32 values on the host: copies and kernels of one chunk run
// while the collective moves the others. The bytes on the wire are the
// real encoding's, so device and host ranks can share a collective.
#pragma once

#include <span>
#include <string>

#include "qccl/codecs/device_vector.h"
#include "qccl/collectives/element_form.h"
#include "qccl/collectives/reduction.h"

namespace qccl {

// Where the input's and the output's element 0 lie among the step's
// elements: 0 and 0 for an allreduce (its output is its input); 0 and this
// rank's block's first for a reduce-scatter; this rank's shard's first and
// 0 for an allgather.
struct StagedVectors {
  std::size_t input_first = 0;
  std::size_t output_first = 0;
};

class StagedReduction final : public Reduction {
 public:
  // `codes`: this rank's codes of its input vector, from input.encode;
  // `result`: output.result_codes, where the finished chunks' codes go.
  // `inner` does the combining (an allgather's encoding combines nothing).
  StagedReduction(Reduction& inner, const ElementForm& form, DeviceVector& input,
                  std::span<const std::byte> codes, DeviceVector& output,
                  std::span<std::byte> result, StagedVectors where)
      : inner_(inner), form_(form), output_form_(form), input_(input), codes_(codes),
        output_(output), result_(result), where_(where) {
    output_form_.vector_first = where.output_first;
  }

  std::string name() const override { return inner_.name(); }
  std::size_t granularity() const override { return inner_.granularity(); }
  std::size_t max_encoded_bytes(std::size_t count) const override { return inner_.max_encoded_bytes(count); }

  std::size_t encode(std::span<const float> in, std::size_t first, std::span<std::byte> out) override;
  // Keeps the codes of a chunk that holds the complete mean and starts its
  // decoding on the vector (`out` is not written).
  void decode(std::span<const std::byte> in, std::size_t first, std::span<float> out) override;
  // A device step returns no own contribution: refused.
  void decode_contribution(std::span<const std::byte> in, std::size_t first, std::span<float> out) override;
  std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                     std::size_t accum_bytes, const ReduceContext& context) override {
    return inner_.reduce(incoming, accum, accum_bytes, context);
  }

 private:
  Reduction& inner_;
  ElementForm form_;
  ElementForm output_form_;  // the output vector's elements start at output_first
  DeviceVector& input_;
  std::span<const std::byte> codes_;
  DeviceVector& output_;
  std::span<std::byte> result_;
  StagedVectors where_;
};

}  // namespace qccl
