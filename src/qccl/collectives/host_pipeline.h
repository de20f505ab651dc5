// The hierarchical allreduce's three steps (hierarchical.h), pipelined over
// parts of the vector.
//
// Unpipelined, a rank sums its host's inputs, then exchanges its slice
// across hosts, then shares the slices within the host: the fp32 steps
// within the host (shared memory, CPU-bound) and the exchange across hosts
// (the network card) take turns, and each waits for the other. Cut into K
// parts, part k's exchange across hosts runs while the host already sums
// part k+1 and shares part k−1, as NCCL's hierarchical algorithms overlap
// their levels: the call takes about the longer of the two levels plus one
// part of the other, instead of their sum.
//
// The steps within the host run on a second thread, on the host's
// communicator, in one fixed order on every rank (sum 0, sum 1, share 0,
// sum 2, share 1, ..., share K−1), so that the host's ranks call its
// collectives in the same order; the calling thread runs the exchanges
// across hosts, part by part, on the communicator across hosts. The two
// communicators are duplicates of their own (host_groups.h), so their
// messages never match.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "qccl/collectives/host_groups.h"
#include "qccl/collectives/layout.h"
#include "qccl/common/duration.h"

namespace qccl {

// At most this many parts: each part adds rounds of latency-bound
// exchanges across hosts and a hand-over between the levels, so past this
// more parts buy little overlap. (On 2 hosts × 2 ranks at 1 Gbit/s, 64 MiB
// ran fastest in 32 parts of 2 MiB; 64 parts of 1 MiB were slower:
// docs/cluster.md.)
inline constexpr std::size_t kMaxHostPipelineParts = 64;

// The parts of a vector of `count` fp32 elements: about `part_bytes` each
// (CollectiveOptions::host_part_bytes), at most kMaxHostPipelineParts, on
// multiples of `granularity` (the reduction's); a single part when
// `part_bytes` is 0 or the vector is shorter than two parts.
std::vector<Range> host_pipeline_parts(std::size_t count, std::size_t part_bytes,
                                       std::size_t granularity);

// Each part's L slices (host_slices, relative to the part's start), and
// where this rank's slice of each part lies in a buffer that holds them one
// after another (own_total() elements).
struct HostPartSlices {
  std::vector<std::vector<Range>> slices;
  std::vector<Range> own;
  std::size_t own_total() const { return own.empty() ? 0 : own.back().first + own.back().count; }
};
HostPartSlices host_part_slices(std::span<const Range> parts, int local_size, int local_rank,
                                std::size_t granularity);

// The steps of one part; each is called with the part's index.
struct HostPipelineSteps {
  std::function<void(std::size_t)> sum_within_host;     // on the host's communicator
  std::function<void(std::size_t)> across_hosts;        // on the communicator across hosts
  std::function<void(std::size_t)> gather_within_host;  // on the host's communicator
};

// Runs the steps of `parts` parts, overlapped as above (in order on the
// calling thread when there is one part). If a step throws, the other level
// is cancelled (Communicator::cancel: its call in flight fails at its next
// wait) and the first failure is rethrown once both threads have stopped.
// A wait of one level for the other is bounded by `timeout`, as every step
// is.
void run_host_pipeline(HostGroups& groups, std::size_t parts, const HostPipelineSteps& steps,
                       Timeout timeout);

}  // namespace qccl
