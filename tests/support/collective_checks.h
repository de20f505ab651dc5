// Checks of each collective against its closed-form result, written against
// a Communicator so the same checks run in process and under mpirun.
#pragma once

#include <cstddef>
#include <span>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"

namespace qccl::test {

struct CollectiveCase {
  std::size_t count = 0;
  Algorithm algorithm = Algorithm::ring;
  bool in_place = false;
  std::size_t chunk_bytes = std::size_t{1} << 20;
  Algorithm between_hosts = Algorithm::ring;  // algorithm hierarchical's second level
  std::size_t host_part_bytes = CollectiveOptions{}.host_part_bytes;  // and its pipeline's parts
};

// Expects `data` to be bitwise identical on every rank.
void expect_identical_across_ranks(Communicator& comm, std::span<const float> data);

// fp32 sum of pattern() inputs: exact closed form, identical everywhere.
void check_allreduce_fp32(Communicator& comm, const CollectiveCase& c);
// Order-dependent float inputs: close to the exact sum, identical everywhere.
void check_allreduce_noise(Communicator& comm, const CollectiveCase& c);
// The size-changing SparseTestReduction through ring or halving-doubling.
void check_allreduce_sparse(Communicator& comm, const CollectiveCase& c);
void check_reduce_scatter(Communicator& comm, const CollectiveCase& c);
void check_allgather(Communicator& comm, const CollectiveCase& c);
// Rank r contributes count + 3r elements (so sizes differ per rank).
void check_allgatherv(Communicator& comm, const CollectiveCase& c);
void check_broadcast(Communicator& comm, const CollectiveCase& c, int root);

}  // namespace qccl::test
