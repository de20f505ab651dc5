#include "qccl/collectives/allreduce.h"

#include <cstring>

#include "qccl/collectives/codec_queue.h"
#include "qccl/collectives/codec_steps.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/halving_doubling.h"
#include "qccl/collectives/hierarchical.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/native.h"
#include "qccl/collectives/schedule.h"
#include "qccl/collectives/validate.h"
#include "qccl/common/errors.h"

namespace qccl {

void validate_allreduce(std::span<const float> input, std::span<const float> output,
                        const Reduction& reduction, const CollectiveOptions& options) {
  constexpr std::string_view op = "allreduce";
  validate_options(options, op);
  check_same_length(input.size(), output.size(), op);
  check_no_partial_overlap(input, output, op);
  checked_granularity(reduction, op);
  if (options.algorithm == Algorithm::native) check_native(reduction, op);
  if (options.algorithm == Algorithm::hierarchical) check_hierarchical_reduction(reduction, op);
}

void allreduce(Communicator& comm, std::span<const float> input, std::span<float> output,
               Reduction& reduction, const CollectiveOptions& options) {
  validate_allreduce(input, output, reduction, options);
  Fingerprint fingerprint("allreduce");
  fingerprint.add_text("algorithm", to_string(options.algorithm))
      .add("element count", static_cast<std::int64_t>(input.size()))
      .add_text("reduction", reduction.name())
      .add("host part bytes", options.algorithm == Algorithm::hierarchical
                                  ? static_cast<std::int64_t>(options.host_part_bytes)
                                  : 0);
  CollectiveCall call(comm, std::move(fingerprint), comm.timeout(options.timeout));
  // Every rank is in this call (the check passed): the hierarchical levels
  // are split off here on the first such call, so that hosts of unequal
  // size are refused on every rank without poisoning the communicator.
  if (options.algorithm == Algorithm::hierarchical && !input.empty()) comm.host_groups();
  call.move([&](int tag) { allreduce_body(comm, tag, input, output, reduction, options); });
}

void allreduce_body(Communicator& comm, int tag, std::span<const float> input,
                    std::span<float> output, Reduction& reduction,
                    const CollectiveOptions& options, std::span<float> own) {
  const Timeout timeout = comm.timeout(options.timeout);
  const std::size_t count = input.size();
  const bool identity = reduction.identity_layout();
  if (identity && input.data() != output.data() && count > 0) {
    std::memcpy(output.data(), input.data(), count * sizeof(float));
  }
  if (options.algorithm == Algorithm::native) {
    native_allreduce(comm, input, output, reduction, options, own);
    return;
  }
  if (options.algorithm == Algorithm::hierarchical) {
    if (!own.empty()) {
      throw InvalidArgument("allreduce: the hierarchical algorithm reduces host sums, so no "
                            "rank's own quantized input exists to return: use ring or "
                            "halving-doubling where it is needed (error feedback)");
    }
    hierarchical_allreduce_body(comm, tag, input, output, reduction, options);
    return;
  }
  if (count == 0) return;
  const std::size_t granularity = reduction.granularity();
  const std::size_t parts = options.algorithm == Algorithm::halving_doubling
                                ? halving_doubling_blocks(comm.size())
                                : static_cast<std::size_t>(comm.size());
  const auto segments = split_range({0, count}, parts, granularity);
  SlotLayout layout(segments, chunks_for(segments, options.chunk_bytes), granularity, reduction);
  std::span<std::byte> work = identity ? std::as_writable_bytes(output)
                                       : comm.scratch(Scratch::work, layout.total_bytes());
  if (overlaps_codec(reduction, options)) {
    CodecQueue codec(reduction, layout, work, {input, 0, own}, {output, 0}, options.phases);
    run_schedule(comm, tag, layout, work, &reduction, SchedulePhases::allreduce, options, timeout,
                 "allreduce", &codec);
    return;
  }
  {
    PhaseScope timed(options.phases, &PhaseTimes::encode);
    encode_slots(reduction, layout, all_slots(layout), input, 0, work, own);
  }
  run_schedule(comm, tag, layout, work, &reduction, SchedulePhases::allreduce, options, timeout,
               "allreduce");
  PhaseScope timed(options.phases, &PhaseTimes::decode);
  decode_slots(reduction, layout, work, all_slots(layout), output, 0);
}

}  // namespace qccl
