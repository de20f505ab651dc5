// The Encoding a device step of a gathered codec (min-max: its ranks'
// encodings are decoded, not combined, Aggregation::allgather_decode)
// hands to the host's gathering bodies (collectives/decode_sum.h, the
// allgather): they cut, move and hand back the encoding's own chunks, as
// for host data, while the values stay on the device. Its encode() builds
// a chunk from this rank's codes that the device made (codes_ready first)
// as the real encoding would send it; its decode() and decode_add() — the
// bodies call them for each chunk in rank order, decode for rank 0 — place
// each rank's chunk among the result's codes, and once every rank's is in,
// start the device decoding that chunk into the mean (or, for an
// allgather, its one rank's values). So host and device ranks can share
// the collective, and nothing at full precision leaves the device.
//
// One range per vector (min-max's bucket=0): the form's one bucket is the
// whole encoded vector, but the encoding's granularity is 1, so the
// collective cuts chunks anywhere. A chunk's records are then two runs —
// the vector's range and the chunk's indices — which encode() joins into
// a chunk of one bucket and keep() puts back among each rank's records of
// the whole output; the device decodes the output once every chunk of
// every rank is in.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "qccl/codecs/device_vector.h"
#include "qccl/codecs/staged_reduction.h"
#include "qccl/collectives/element_form.h"
#include "qccl/collectives/encoding.h"

namespace qccl {

class GatheredStaging final : public Encoding {
 public:
  // `form`: the step's form (one rank's codes, form.ranks = 1);
  // `result_form`: the output's (result_form.ranks ranks' codes of each
  // element, and their division); `codes`: input.encode's; `result`:
  // output.result_codes, sized by result_form.
  GatheredStaging(Encoding& inner, const ElementForm& form, const ElementForm& result_form,
                  DeviceVector& input, std::span<const std::byte> codes, DeviceVector& output,
                  std::span<std::byte> result, StagedVectors where);

  std::string name() const override { return inner_.name(); }
  std::size_t granularity() const override { return inner_.granularity(); }
  std::size_t max_encoded_bytes(std::size_t count) const override { return inner_.max_encoded_bytes(count); }

  std::size_t encode(std::span<const float> in, std::size_t first, std::span<std::byte> out) override;
  // Rank 0's chunk (the only one of an allgather's chunk); `out` is not written.
  void decode(std::span<const std::byte> in, std::size_t first, std::span<float> out) override;
  // The next rank's chunk of the same elements; neither `out` nor `scratch` is touched.
  void decode_add(std::span<const std::byte> in, std::size_t first, std::span<float> out,
                  std::span<float> scratch) override;
  // A device step returns no own contribution: refused.
  void decode_contribution(std::span<const std::byte> in, std::size_t first, std::span<float> out) override;
  // Whether every output element's decoding has started (every rank's
  // chunk of it kept): what a finished collective must leave.
  bool complete() const { return kept_ == output_.size(); }

 private:
  void keep(std::span<const std::byte> in, std::size_t first, std::size_t count);
  // The same for one range per vector: `at` the chunk's first element in the output.
  void keep_one_range(std::span<const std::byte> in, std::size_t at, std::size_t count);

  Encoding& inner_;
  ElementForm form_;         // one rank's codes
  ElementForm output_form_;  // the result's: ranks' codes, the output's element 0
  DeviceVector& input_;
  std::span<const std::byte> codes_;
  DeviceVector& output_;
  std::span<std::byte> result_;
  StagedVectors where_;
  bool one_range_;  // chunks cut inside the form's one bucket per vector
  std::size_t chunk_first_ = 0;
  int next_rank_ = 0;  // the rank whose chunk of chunk_first_ comes next
  std::size_t kept_ = 0;  // output elements whose every rank's chunk is in
  // One range: which ranges of the result (rank by bucket) a chunk has set
  // already; later chunks must carry the same range.
  std::vector<bool> range_set_;
};

}  // namespace qccl
