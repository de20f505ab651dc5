// The sharded engine's own parts (sharded.h): its groups, its units and the
// oracle in progress, shared by its implementation files (sharded.cc: the
// groups and the oracle; sharded_state.cc: the whole model, checkpoints,
// reports). Not part of the interface.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "qccl/common/checksum.h"
#include "qccl/common/duration.h"
#include "qccl/codecs/codec.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/stream.h"
#include "qccl/collectives/work.h"

namespace qccl::engines {

// A float tensor's data.
inline float* floats(const torch::Tensor& t) { return t.data_ptr<float>(); }

// One flat vector of a unit's parameters that share codecs: its matrices,
// or its vectors (biases, normalization), which stay full precision.
struct ShardedEngineGroup {
  std::string name;
  std::size_t unit = 0;
  std::vector<torch::Tensor> parameters;
  std::vector<std::vector<std::int64_t>> shapes;  // theirs (their data is freed between uses)
  std::vector<std::size_t> offsets;  // of each parameter in the flat vector
  std::size_t elements = 0;
  std::vector<Range> shards;         // every rank's, in rank order
  std::vector<std::size_t> counts;   // their lengths
  torch::Tensor shard;               // this rank's fp32 values: what the optimizer updates
  std::unique_ptr<Codec> weights, gradients;

  std::int64_t length(std::size_t j) const {
    return std::accumulate(shapes[j].begin(), shapes[j].end(), std::int64_t{1}, std::multiplies<>());
  }
  // The whole group while gathered: one tensor whose storage is filled by
  // each gather and emptied at each release, in place, so that the views
  // of it that a block's autograd graph saved in forward see the weights
  // gathered again for its backward.
  torch::Tensor flat;

  // Gives `flat` fresh memory (before a gather writes into it).
  void allocate() {
    auto fresh = torch::empty({static_cast<std::int64_t>(elements)});
    auto* from = fresh.storage().unsafeGetStorageImpl();
    auto* to = flat.storage().unsafeGetStorageImpl();
    to->set_data_ptr_noswap(from->set_data_ptr(at::DataPtr(nullptr, from->device())));
    to->set_nbytes(elements * sizeof(float));
    from->set_nbytes(0);
  }
  // Points the parameters at their parts of `flat`.
  void point_at_flat() {
    for (std::size_t j = 0; j < parameters.size(); ++j) {
      parameters[j].set_data(
          flat.narrow(0, static_cast<std::int64_t>(offsets[j]), length(j)).view(shapes[j]));
    }
  }
  // Frees the parameters' data (they become empty until the next gather)
  // and `flat`'s memory.
  void free_data() {
    for (auto& p : parameters) p.set_data(torch::empty({0}));
    flat.storage().unsafeGetStorageImpl()->reset();
  }
  // The parameters' gradients (zero where undefined) as one flat vector.
  torch::Tensor flat_gradient(const std::vector<torch::Tensor>& gradients) const {
    auto out = torch::empty({static_cast<std::int64_t>(elements)});
    for (std::size_t j = 0; j < gradients.size(); ++j) {
      auto part = out.narrow(0, static_cast<std::int64_t>(offsets[j]), length(j));
      if (gradients[j].defined()) part.copy_(gradients[j].reshape({-1}));
      else part.zero_();
    }
    return out;
  }
};

struct ShardedEngineUnit {
  std::string name;
  std::vector<std::size_t> groups;
  // checksum64_lanes of the latest gather's weights, group after group:
  // written by the gather on the weights stream, read once it is waited for.
  std::uint64_t gathered_checksum = 0;
  bool held = false;  // gathered or being gathered: from submit_gather() to release()
  // A block's biases and norms: in unit 0's group of vectors, gathered for
  // the whole oracle; the block's backward sets their gradients.
  std::vector<torch::Tensor> vectors;
  Work gather;  // the latest gather submitted
};

// One stream's encode and decode times, and the rest of its exchanges'
// time (transfers and waits for them), summed over an oracle.
struct ShardedStreamTimes {
  PhaseTimes phases;
  double communicate = 0;
  // Runs `exchange(&phases)` (which adds its encoding and decoding to
  // them) and adds the rest of its time to `communicate`.
  template <typename Exchange>
  void time(Exchange&& exchange) {
    const auto start = Clock::now();
    const double coded = phases.encode + phases.decode;
    exchange(&phases);
    communicate += seconds_since(start) - (phases.encode + phases.decode - coded);
  }
};

// The oracle in progress: every exchange it submitted, and its times.
struct ShardedEngineStep {
  std::uint64_t codec_step = 0;
  std::size_t next_block = 0, backward_blocks = 0;
  std::vector<Work> exchanges;
  double waiting = 0;
  std::size_t gathered_now = 0;
  std::uint64_t checksum = kChecksumSeed;
  // Per unit, the checksum of its forward gather: its backward gather must
  // bring the same bits (the same codec step), or backward would
  // differentiate at other weights than forward ran with.
  std::vector<std::optional<std::uint64_t>> forward_checksums;
  // Written by the streams' threads, read after their work is waited for:
  // the weights stream's and the gradients stream's, whatever they run.
  ShardedStreamTimes weights, gradients;
  ShardedStreamTimes& times_of(const Stream& stream, const Stream& weights_stream) {
    return &stream == &weights_stream ? weights : gradients;
  }
};

}  // namespace qccl::engines
