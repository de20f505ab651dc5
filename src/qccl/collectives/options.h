// Per-call options of the collectives, with their defaults.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qccl/common/duration.h"

namespace qccl {

enum class Algorithm {
  ring,    // reduce-scatter then allgather around a ring, pipelined in chunks
  tree,    // recursive halving then recursive doubling (any rank count)
  native,  // the transport's own allreduce (MPI_Allreduce): the uncompressed baseline
};

std::string_view to_string(Algorithm algorithm);
// Parses "ring", "tree" or "native"; throws InvalidArgument listing them.
Algorithm parse_algorithm(std::string_view text);
std::vector<std::string> algorithm_names();

struct CollectiveOptions {
  Algorithm algorithm = Algorithm::ring;
  // Bound on every wait of this call; unset: the communicator's timeout.
  std::optional<Timeout> timeout;
  // Largest pipelined message, in bytes of uncompressed fp32 input. Segments
  // of 256 KiB or more are also cut into at least 4 chunks (of >= 64 KiB).
  std::size_t chunk_bytes = std::size_t{1} << 20;
  // Receives in flight at once (each needs a staging buffer of one chunk).
  int window = 4;
};

}  // namespace qccl
