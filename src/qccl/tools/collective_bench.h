// `qccl bench allreduce|allgather|reduce-scatter|broadcast`: measures a
// collective over a range of sizes and algorithms, in the nccl-tests
// convention, and checks every result against its closed form.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/codecs/codec.h"
#include "qccl/collectives/options.h"

namespace qccl::tools {

enum class BenchOperation { allreduce, allgather, reduce_scatter, broadcast };

std::string_view to_string(BenchOperation op);
// Algorithms each operation implements: ring, halving-doubling and native
// (MPI) for allreduce, reduce-scatter and allgather, hierarchical for
// allreduce (and, with a codec, for the other two: validate() takes it);
// broadcast has one (a pipelined binomial tree), listed as ring.
std::vector<Algorithm> algorithms_for(BenchOperation op);
// The codec operation a benchmark operation runs with --codec (none for
// broadcast).
std::optional<CodecOperation> codec_operation(BenchOperation op);

struct BenchConfig {
  BenchOperation operation = BenchOperation::allreduce;
  std::vector<Algorithm> algorithms{Algorithm::ring, Algorithm::halving_doubling, Algorithm::native};
  std::size_t min_bytes = 1024;
  std::size_t max_bytes = std::size_t{64} << 20;
  std::size_t step_factor = 2;
  int iterations = 20;
  int warmup = 5;
  bool in_place = false;
  std::size_t chunk_bytes = CollectiveOptions{}.chunk_bytes;
  int window = CollectiveOptions{}.window;
  // Algorithm hierarchical, allreduce: the pipeline's part size (0: one part).
  std::size_t host_part_bytes = CollectiveOptions{}.host_part_bytes;
  // A codec spec run as the operation's codec form (allreduce mean,
  // reduce-scatter mean, allgather) on ring and halving-doubling; `native`
  // stays MPI's fp32 collective, the baseline beside it. Empty: the plain
  // fp32 collectives on every algorithm.
  std::string codec;
  // The rate of each rank's link, in bits/s, when known (an emulated or real
  // cluster); 0 otherwise. Rows then report the fraction of the wire bound.
  double link_rate_bps = 0;
  // With a codec: run it on native too, as MPI's collective over its
  // encoding (codecs with an MPI equivalent: fp16). native is then no longer
  // the fp32 baseline.
  bool native_codec = false;
  // Algorithm hierarchical: the algorithm between hosts.
  Algorithm between_hosts = Algorithm::ring;
};

// Throws InvalidArgument for an inconsistent configuration.
void validate(const BenchConfig& config);

struct BenchRow {
  std::size_t bytes = 0;   // S: uncompressed bytes of the whole vector
  std::size_t count = 0;   // fp32 elements per rank's input
  Algorithm algorithm = Algorithm::ring;
  double median_us = 0;    // over iterations of the max over ranks
  double p99_us = 0;
  double algbw_gbps = 0;   // S / t, GB = 1e9 bytes
  double busbw_gbps = 0;   // algbw * bus factor
  // Bytes this collective sent per rank per call (the most of any rank);
  // unset for native, whose traffic happens inside MPI; for hierarchical,
  // what it sent across hosts (its fp32 steps within a host are MPI's).
  std::optional<double> sent_bytes_per_rank;
  // Elements that differ from the closed form (beyond the codec's worst-case
  // error bound for a lossy codec), summed over ranks.
  std::size_t wrong = 0;
  // False when the codec has no worst-case bound (IntDIANA, error
  // feedback): `wrong` then counts nothing.
  bool checked = true;
};

// Runs the benchmark on every rank (all ranks must call it); every rank
// returns the same rows.
std::vector<BenchRow> run_collective_bench(Communicator& comm, const BenchConfig& config);

// nccl-tests bus-bandwidth factor: 2(n-1)/n for allreduce, (n-1)/n for
// allgather and reduce-scatter, 1 for broadcast.
double bus_factor(BenchOperation op, int ranks);

}  // namespace qccl::tools
