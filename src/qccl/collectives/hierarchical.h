// The hierarchical allreduce: two levels, for clusters of several ranks per
// host behind one network card (host_groups.h gives the levels).
//
// With L ranks on each of H hosts, the vector is cut into L slices:
//  1. within each host, an fp32 reduce-scatter over shared memory (the
//     transport's own): local rank l gets its host's sum of slice l;
//  2. across hosts, the ranks with local rank l (one per host) allreduce
//     slice l with the call's reduction and CollectiveOptions::between_hosts
//     — compressed, for a codec (Codec builds the step's encoding for the H
//     host means: codec.h);
//  3. within each host, an fp32 allgather of the slices.
// So a host's card carries each of its slices once, (H−1)/H of the vector
// out and in per allreduce, against 2(n−1)/n for the flat ring when its
// ranks are placed host by host; and the latency-bound rounds between hosts
// fall from n−1 to H−1 per phase. Every rank ends with identical bytes:
// each slice is reduced once, identically on its H ranks (the reduction's
// contract), and copied within the host.
#pragma once

#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/host_groups.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/options.h"
#include "qccl/collectives/reduction.h"

namespace qccl {

// The L slices of a vector of `count` elements, on boundaries that are
// multiples of `granularity`.
std::vector<Range> host_slices(std::size_t count, int local_size, std::size_t granularity);

// Step 1: `slice` (slices[l] long, l this rank's local rank) receives the
// sum over this host's ranks of their inputs' slice l, times `scale`. With
// `prescale` the inputs are scaled before they are summed (into `scratch`,
// as long as the input), so a mean of values near fp32's largest stays
// finite; otherwise the sum is scaled.
void sum_within_host(HostGroups& groups, std::span<const float> input,
                     std::span<const Range> slices, float scale, bool prescale,
                     std::span<float> slice, std::span<float> scratch, Timeout timeout);

// Step 3: every rank of the host receives every slice into `output`, local
// rank l's from its `slice`.
void gather_within_host(HostGroups& groups, std::span<const float> slice,
                        std::span<const Range> slices, std::span<float> output, Timeout timeout);

// Steps 1-3 for the ranks' `input`, pipelined in parts of about
// `part_bytes` (host_pipeline.h), into `output` (which may be the input):
// each part's host sums of this rank's slice, scaled by `scale` (prescaled
// as for sum_within_host), land in `comm`'s scratch and are reduced across
// hosts by `across(slice, first)`, `first` being the slice's first element
// in the whole vector (for encodings keyed by place), then shared within
// the host. The fp32 allreduce and the codecs' means both run this.
using AcrossHosts = std::function<void(std::span<float> slice, std::size_t first)>;
void allreduce_in_host_parts(Communicator& comm, std::span<const float> input,
                             std::span<float> output, float scale, bool prescale,
                             std::size_t part_bytes, std::size_t granularity,
                             const AcrossHosts& across, Timeout timeout);

// The hierarchical allreduce of an exact fp32 reduction (identity layout:
// Fp32Sum), whose host sums it may combine as they are. A codec's
// reduction is built for its ranks' inputs, not for host sums: codecs run
// the algorithm through Codec::allreduce_mean, and other reductions are
// refused with InvalidArgument.
// Throws InvalidArgument unless `reduction` is an exact fp32 one (above).
void check_hierarchical_reduction(const Reduction& reduction, std::string_view operation);

void hierarchical_allreduce_body(Communicator& comm, int tag, std::span<const float> input,
                                 std::span<float> output, Reduction& reduction,
                                 const CollectiveOptions& options);

// Reduce-scatter and allgather in two levels work on the ranks' pieces
// (blocks, shards) regrouped by local rank: region l of the regrouped
// vector holds the pieces of the ranks with local rank l, in host order, so
// that step 1 (or 3) moves one region per local rank within the host and
// step 2 one piece per host across them.
struct HostRegions {
  std::vector<Range> regions;  // per local rank, in the regrouped vector
  std::vector<Range> placed;   // per rank: where its piece lies in the regrouped vector
  // Local rank l's pieces in host order, relative to its region's start:
  // the pieces of step 2, on the ranks across hosts.
  std::vector<Range> across_pieces(int local_rank, const HostLayout& layout) const;
};
HostRegions regroup_by_local_rank(const HostLayout& layout, std::span<const Range> pieces);
// to[placed[r]] = from[pieces[r]] · scale for every rank r (the regrouping),
// and its inverse.
void regroup(std::span<const float> from, std::span<const Range> pieces, const HostRegions& regions,
             float scale, std::span<float> to);
void ungroup(std::span<const float> from, const HostRegions& regions,
             std::span<const Range> pieces, std::span<float> to);

// The options of step 2: algorithm between_hosts.
CollectiveOptions between_hosts_options(const CollectiveOptions& options);

}  // namespace qccl
