#include "qccl/collectives/reduce_scatter.h"

#include <cstring>

#include "qccl/collectives/codec_queue.h"
#include "qccl/collectives/codec_steps.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/native.h"
#include "qccl/collectives/schedule.h"
#include "qccl/collectives/validate.h"
#include "qccl/common/errors.h"

namespace qccl {

std::vector<Range> reduce_scatter_blocks(std::size_t count, int ranks, std::size_t granularity) {
  return split_range({0, count}, static_cast<std::size_t>(ranks), granularity);
}

std::vector<Range> blocks_from_counts(std::span<const std::size_t> counts, std::size_t total,
                                      std::size_t granularity, int ranks) {
  if (counts.size() != static_cast<std::size_t>(ranks)) {
    throw InvalidArgument("reduce-scatter: counts has " + std::to_string(counts.size()) +
                          " entries for " + std::to_string(ranks) + " ranks");
  }
  const std::vector<Range> blocks = ranges_from_counts(counts);
  const std::size_t summed = blocks.empty() ? 0 : blocks.back().end();
  if (summed != total) {
    throw InvalidArgument("reduce-scatter: counts sum to " + std::to_string(summed) +
                          " but the input has " + std::to_string(total) + " elements");
  }
  for (std::size_t r = 0; r + 1 < blocks.size(); ++r) {
    const bool later_data = blocks[r].end() < total;
    if (later_data && blocks[r].end() % granularity != 0) {
      throw InvalidArgument("reduce-scatter: block of rank " + std::to_string(r) + " ends at " +
                            std::to_string(blocks[r].end()) +
                            ", not a multiple of the reduction's granularity " +
                            std::to_string(granularity));
    }
  }
  return blocks;
}

void reduce_scatter(Communicator& comm, std::span<const float> input, std::span<float> output,
                    Reduction& reduction, const CollectiveOptions& options,
                    std::span<const std::size_t> counts) {
  constexpr std::string_view op = "reduce-scatter";
  validate_options(options, op);
  refuse_hierarchical(options, op);
  if (options.algorithm == Algorithm::native) check_native(reduction, op);
  const std::size_t granularity = checked_granularity(reduction, op);
  const auto blocks = counts.empty()
                          ? reduce_scatter_blocks(input.size(), comm.size(), granularity)
                          : blocks_from_counts(counts, input.size(), granularity, comm.size());
  const Range mine = blocks[static_cast<std::size_t>(comm.rank())];
  if (output.size() != mine.count) {
    throw InvalidArgument("reduce-scatter: rank " + std::to_string(comm.rank()) + "'s block has " +
                          std::to_string(mine.count) + " elements but output has " +
                          std::to_string(output.size()));
  }
  check_no_partial_overlap(input, output, op);
  Fingerprint fingerprint(op);
  fingerprint.add_text("algorithm", to_string(options.algorithm))
      .add("element count", static_cast<std::int64_t>(input.size()))
      .add("block counts", hash62(range_counts(blocks)))
      .add_text("reduction", reduction.name());
  run_collective(comm, fingerprint, comm.timeout(options.timeout), [&](int tag) {
    reduce_scatter_body(comm, tag, input, blocks, output, reduction, options);
  });
}

void reduce_scatter_body(Communicator& comm, int tag, std::span<const float> input,
                         std::span<const Range> blocks, std::span<float> output,
                         Reduction& reduction, const CollectiveOptions& options,
                         std::span<float> own) {
  if (options.algorithm == Algorithm::native) {
    native_reduce_scatter(comm, input, blocks, output, reduction, options, own);
    return;
  }
  if (input.empty()) return;
  const std::size_t granularity = reduction.granularity();
  SlotLayout layout(blocks, chunks_for(blocks, options.chunk_bytes), granularity, reduction);
  // The input is const: the collective works on a scratch copy (fp32) or encoding.
  std::span<std::byte> work = comm.scratch(Scratch::work, layout.total_bytes());
  const bool identity = reduction.identity_layout();
  // An empty span may hold a null pointer, which memcpy must never get.
  if (identity && !input.empty()) std::memcpy(work.data(), input.data(), input.size_bytes());
  const Timeout timeout = comm.timeout(options.timeout);
  const std::size_t rank = static_cast<std::size_t>(comm.rank());
  const Range mine = blocks[rank];
  if (overlaps_codec(reduction, options)) {
    CodecQueue codec(reduction, layout, work, {input, 0, own}, {output, mine.first},
                     options.phases);
    run_schedule(comm, tag, layout, work, &reduction, SchedulePhases::reduce_scatter, options,
                 timeout, "reduce-scatter", &codec);
    return;
  }
  {
    PhaseScope timed(options.phases, &PhaseTimes::encode);
    encode_slots(reduction, layout, all_slots(layout), input, 0, work, own);
  }
  run_schedule(comm, tag, layout, work, &reduction, SchedulePhases::reduce_scatter, options,
               timeout, "reduce-scatter");
  PhaseScope timed(options.phases, &PhaseTimes::decode);
  if (identity && !output.empty()) {  // an empty block may have no storage at all
    std::memcpy(output.data(), work.data() + mine.first * sizeof(float), output.size_bytes());
  }
  decode_slots(reduction, layout, work, segment_slots(layout, rank), output, mine.first);
}

}  // namespace qccl
