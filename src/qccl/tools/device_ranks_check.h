// qccl-device-check's second table: several in-process ranks sharing one
// GPU, one CUDA stream each, each rank's vector in device memory, one
// allreduce-mean step of a codec (Codec::allreduce_mean on a CudaVector),
// then one reduce-scatter-mean step (each rank's block in a CudaVector of
// its own), then, for codecs that gather, one allgather of each rank's
// shard (the first 1/n of its vector). Every rank's result must equal the
// same step on host data and lie within the codec's error bound of the
// exact result; the allreduce's and the allgather's must be bitwise
// identical on every rank.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace qccl::tools {

struct DeviceRanksRow {
  std::string spec;
  std::string operation;  // "allreduce", "reduce-scatter" or "allgather"
  int ranks = 0;
  bool identical_across_ranks = false;  // true for the reduce-scatter's blocks
  bool equals_host_step = false;       // on every rank
  double max_error = 0;  // max |result − exact result|
  double bound = 0;      // the codec's bound on it
  double step_ms = 0;    // the slowest rank's step, wall clock
};

std::vector<DeviceRanksRow> check_ranks_on_one_gpu(int ranks, std::size_t count);

}  // namespace qccl::tools
