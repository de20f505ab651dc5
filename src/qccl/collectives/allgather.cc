#include "qccl/collectives/allgather.h"

#include <algorithm>
#include <cstring>

#include "qccl/collectives/codec_queue.h"
#include "qccl/collectives/codec_steps.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/direct_gather.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/collectives/native.h"
#include "qccl/collectives/ring.h"
#include "qccl/collectives/schedule.h"
#include "qccl/collectives/small_allreduce.h"
#include "qccl/collectives/validate.h"
#include "qccl/common/errors.h"

namespace qccl {
void allgatherv_bytes_body(Communicator& comm, int tag, std::span<const std::byte> input,
                           std::span<const std::size_t> byte_counts, std::span<std::byte> output,
                           const CollectiveOptions& options) {
  const Timeout timeout = comm.timeout(options.timeout);
  if (comm.size() <= kDirectGatherRanks) {
    allgatherv_bytes_direct(comm, tag, input, byte_counts, output, timeout, "allgather");
    return;
  }
  check_allgather_arguments(input.size(), output.size(), byte_counts, comm.size(), comm.rank());
  const auto me = static_cast<std::size_t>(comm.rank());
  const std::size_t largest = *std::max_element(byte_counts.begin(), byte_counts.end());
  const std::size_t chunks =
      std::max<std::size_t>(1, (largest + options.chunk_bytes - 1) / options.chunk_bytes);
  SlotLayout layout(byte_counts, chunks);
  std::byte* destination = output.data() + layout.slot(me, 0).offset;
  if (!input.empty() && input.data() != destination) {
    std::memmove(destination, input.data(), input.size());
  }
  if (!output.empty()) {
    run_ring(comm, tag, layout, output, nullptr, RingPhases::allgather, options, timeout,
             "ring allgather");
  }
}


void allgather(Communicator& comm, std::span<const float> input, std::span<float> output,
               const CollectiveOptions& options) {
  const std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()), input.size());
  allgatherv(comm, input, counts, output, options);
}

void allgatherv(Communicator& comm, std::span<const float> input,
                std::span<const std::size_t> counts, std::span<float> output,
                const CollectiveOptions& options) {
  constexpr std::string_view op = "allgather";
  validate_options(options, op);
  refuse_hierarchical(options, op);
  check_allgather_arguments(input.size(), output.size(), counts, comm.size(), comm.rank(),
                            "elements");
  Fp32Sum identity;
  Fingerprint fingerprint(op);
  fingerprint.add_text("algorithm", to_string(options.algorithm)).add("counts", hash62(counts));
  const auto shards = ranges_from_counts(counts);
  run_collective(comm, fingerprint, comm.timeout(options.timeout), [&](int tag) {
    allgather_body(comm, tag, input, shards, output, identity, options);
  });
}

void allgatherv_bytes(Communicator& comm, std::span<const std::byte> input,
                      std::span<const std::size_t> byte_counts, std::span<std::byte> output,
                      const CollectiveOptions& options) {
  constexpr std::string_view op = "allgather";
  validate_options(options, op);
  refuse_hierarchical(options, op);
  require_ring(options, op);
  check_allgather_arguments(input.size(), output.size(), byte_counts, comm.size(), comm.rank());
  Fingerprint fingerprint("allgatherv bytes");
  fingerprint.add("counts", hash62(byte_counts));
  run_collective(comm, fingerprint, comm.timeout(options.timeout), [&](int tag) {
    allgatherv_bytes_body(comm, tag, input, byte_counts, output, options);
  });
}

std::vector<std::size_t> allgather_counts(Communicator& comm, std::size_t count,
                                          const CollectiveOptions& options) {
  validate_options(options, "allgather counts");
  refuse_hierarchical(options, "allgather counts");
  const Timeout timeout = comm.timeout(options.timeout);
  std::vector<std::size_t> counts;
  run_collective(comm, Fingerprint("allgather counts"), timeout,
           [&](int tag) { counts = allgather_counts_body(comm, tag, count, timeout); });
  return counts;
}

// Each rank fills its own entry; a SUM assembles the table.
std::vector<std::size_t> allgather_counts_body(Communicator& comm, int tag, std::size_t count,
                                               Timeout timeout) {
  std::vector<std::int64_t> table(static_cast<std::size_t>(comm.size()), 0);
  table[static_cast<std::size_t>(comm.rank())] = static_cast<std::int64_t>(count);
  small_allreduce(comm, tag, table, ReduceOp::sum, timeout, "allgather counts");
  return {table.begin(), table.end()};
}

void allgather_body(Communicator& comm, int tag, std::span<const float> shard,
                    std::span<const Range> shards, std::span<float> output, Encoding& encoding,
                    const CollectiveOptions& options, std::span<float> own) {
  if (options.algorithm == Algorithm::native) {
    native_allgather(comm, shard, shards, output, encoding, options, own);
    return;
  }
  if (output.empty()) return;
  const auto me = static_cast<std::size_t>(comm.rank());
  const Range mine = shards[me];
  const bool identity = encoding.identity_layout();
  const std::size_t granularity = encoding.granularity();
  SlotLayout layout(shards, chunks_for(shards, options.chunk_bytes), granularity, encoding);
  std::span<std::byte> work = identity ? std::as_writable_bytes(output)
                                       : comm.scratch(Scratch::work, layout.total_bytes());
  if (identity && !shard.empty() && shard.data() != output.data() + mine.first) {
    std::memmove(output.data() + mine.first, shard.data(), shard.size_bytes());
  }
  const Timeout timeout = comm.timeout(options.timeout);
  if (overlaps_codec(encoding, options)) {
    CodecQueue codec(encoding, layout, work, {shard, mine.first, own}, {output, 0},
                     options.phases);
    run_schedule(comm, tag, layout, work, nullptr, SchedulePhases::allgather, options, timeout,
                 "allgather", &codec);
    return;
  }
  {
    PhaseScope timed(options.phases, &PhaseTimes::encode);
    encode_slots(encoding, layout, segment_slots(layout, me), shard, mine.first, work, own);
  }
  run_schedule(comm, tag, layout, work, nullptr, SchedulePhases::allgather, options, timeout,
               "allgather");
  PhaseScope timed(options.phases, &PhaseTimes::decode);
  decode_slots(encoding, layout, work, all_slots(layout), output, 0);
}

}  // namespace qccl
