#include "qccl/collectives/hierarchical.h"

#include <algorithm>
#include <cstring>

#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/host_pipeline.h"
#include "qccl/common/errors.h"

namespace qccl {

std::vector<Range> host_slices(std::size_t count, int local_size, std::size_t granularity) {
  return split_range({0, count}, static_cast<std::size_t>(local_size), granularity);
}

void sum_within_host(HostGroups& groups, std::span<const float> input,
                     std::span<const Range> slices, float scale, bool prescale,
                     std::span<float> slice, std::span<float> scratch, Timeout timeout) {
  std::span<const float> summed = input;
  if (prescale) {
    std::transform(input.begin(), input.end(), scratch.begin(), [&](float x) { return x * scale; });
    summed = scratch.first(input.size());
  }
  const std::vector<std::size_t> counts = range_counts(slices);
  groups.local().transport().reduce_scatter(std::as_bytes(summed), std::as_writable_bytes(slice),
                                            counts, DataType::f32, ReduceOp::sum, timeout);
  if (!prescale && scale != 1.0f) {
    for (float& x : slice) x *= scale;
  }
}

void gather_within_host(HostGroups& groups, std::span<const float> slice,
                        std::span<const Range> slices, std::span<float> output, Timeout timeout) {
  const std::vector<std::size_t> bytes = range_counts(slices, sizeof(float));
  groups.local().transport().allgather(std::as_bytes(slice), std::as_writable_bytes(output), bytes,
                                       timeout);
}

HostRegions regroup_by_local_rank(const HostLayout& layout, std::span<const Range> pieces) {
  HostRegions result;
  result.placed.resize(pieces.size());
  std::size_t at = 0;
  const int local_size = layout.host_size(0);
  for (int l = 0; l < local_size; ++l) {
    const std::size_t start = at;
    for (int h = 0; h < layout.hosts(); ++h) {
      const auto r = static_cast<std::size_t>(layout.rank_at(h, l));
      result.placed[r] = {at, pieces[r].count};
      at += pieces[r].count;
    }
    result.regions.push_back({start, at - start});
  }
  return result;
}

std::vector<Range> HostRegions::across_pieces(int local_rank, const HostLayout& layout) const {
  const std::size_t start = regions[static_cast<std::size_t>(local_rank)].first;
  std::vector<Range> pieces;
  for (int h = 0; h < layout.hosts(); ++h) {
    const Range p = placed[static_cast<std::size_t>(layout.rank_at(h, local_rank))];
    pieces.push_back({p.first - start, p.count});
  }
  return pieces;
}

void regroup(std::span<const float> from, std::span<const Range> pieces, const HostRegions& regions,
             float scale, std::span<float> to) {
  for (std::size_t r = 0; r < pieces.size(); ++r) {
    const float* in = from.data() + pieces[r].first;
    float* out = to.data() + regions.placed[r].first;
    for (std::size_t i = 0; i < pieces[r].count; ++i) out[i] = in[i] * scale;
  }
}

void ungroup(std::span<const float> from, const HostRegions& regions,
             std::span<const Range> pieces, std::span<float> to) {
  for (std::size_t r = 0; r < pieces.size(); ++r) {
    std::copy_n(from.data() + regions.placed[r].first, pieces[r].count,
                to.data() + pieces[r].first);
  }
}

CollectiveOptions between_hosts_options(const CollectiveOptions& options) {
  CollectiveOptions between = options;
  between.algorithm = options.between_hosts;
  return between;
}

void check_hierarchical_reduction(const Reduction& reduction, std::string_view operation) {
  if (reduction.identity_layout()) return;
  throw InvalidArgument(std::string(operation) +
                        ": the hierarchical algorithm combines host sums, which only an exact "
                        "fp32 reduction may take as they are, not '" + reduction.name() +
                        "': run a codec through Codec::allreduce_mean (qccl bench --codec), "
                        "which builds its encoding for host means");
}

void allreduce_in_host_parts(Communicator& comm, std::span<const float> input,
                             std::span<float> output, float scale, bool prescale,
                             std::size_t part_bytes, std::size_t granularity,
                             const AcrossHosts& across, Timeout timeout) {
  HostGroups& groups = comm.host_groups();
  const auto parts = host_pipeline_parts(input.size(), part_bytes, granularity);
  const HostPartSlices slices =
      host_part_slices(parts, groups.local_size(), groups.local_rank(), granularity);
  // The host sums land in scratch: the input may be the output.
  const std::span<float> own = comm.float_scratch(Scratch::decoded, slices.own_total());
  const std::span<float> scaled =
      prescale ? comm.float_scratch(Scratch::work, input.size()) : std::span<float>{};
  const auto own_slice = [&](std::size_t k) {
    return own.subspan(slices.own[k].first, slices.own[k].count);
  };
  const auto part_of = [&](auto vector, std::size_t k) {
    return vector.empty() ? vector : vector.subspan(parts[k].first, parts[k].count);
  };
  const auto local = static_cast<std::size_t>(groups.local_rank());
  run_host_pipeline(
      groups, parts.size(),
      {[&](std::size_t k) {
         sum_within_host(groups, part_of(input, k), slices.slices[k], scale, prescale,
                         own_slice(k), part_of(scaled, k), timeout);
       },
       [&](std::size_t k) { across(own_slice(k), parts[k].first + slices.slices[k][local].first); },
       [&](std::size_t k) {
         gather_within_host(groups, own_slice(k), slices.slices[k], part_of(output, k), timeout);
       }},
      timeout);
}

void hierarchical_allreduce_body(Communicator& comm, int tag, std::span<const float> input,
                                 std::span<float> output, Reduction& reduction,
                                 const CollectiveOptions& options) {
  check_hierarchical_reduction(reduction, "allreduce");
  if (input.empty()) return;
  const CollectiveOptions across = between_hosts_options(options);
  allreduce_in_host_parts(
      comm, input, output, 1.0f, false, options.host_part_bytes, reduction.granularity(),
      [&](std::span<float> slice, std::size_t) {
        allreduce_body(comm.host_groups().across(), tag, slice, slice, reduction, across);
      },
      comm.timeout(options.timeout));
}

}  // namespace qccl
