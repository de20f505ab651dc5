#include "qccl/collectives/allreduce.h"

#include <cstring>

#include "qccl/collectives/codec_steps.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/ring.h"
#include "qccl/collectives/halving_doubling.h"
#include "qccl/collectives/validate.h"
#include "qccl/common/errors.h"

namespace qccl {

void allreduce(Communicator& comm, std::span<const float> input, std::span<float> output,
               Reduction& reduction, const CollectiveOptions& options) {
  constexpr std::string_view op = "allreduce";
  validate_options(options, op);
  check_same_length(input.size(), output.size(), op);
  check_no_partial_overlap(input, output, op);
  const bool in_place = input.data() == output.data();
  const std::size_t granularity = checked_granularity(reduction, op);
  std::optional<NativeReduction> native;
  if (options.algorithm == Algorithm::native) {
    native = reduction.native_equivalent();
    if (!native) {
      throw InvalidArgument("allreduce: algorithm native runs only reductions MPI can do "
                            "(fp32-sum, fp16); '" + reduction.name() + "' runs on ring or halving-doubling");
    }
  }
  const Timeout timeout = comm.timeout(options.timeout);

  Fingerprint fingerprint(op);
  fingerprint.add_text("algorithm", to_string(options.algorithm))
      .add("element count", static_cast<std::int64_t>(input.size()))
      .add_text("reduction", reduction.name());

  comm.run(fingerprint, timeout, [&](int tag) {
    const std::size_t count = input.size();
    const bool identity = reduction.identity_layout();
    if (identity && !in_place && count > 0) {
      std::memcpy(output.data(), input.data(), count * sizeof(float));
    }
    if (native && identity) {
      if (comm.size() > 1) {
        comm.transport().allreduce(std::as_writable_bytes(output), native->type, native->op,
                                   timeout);
      }
      return;
    }
    if (count == 0) return;
    if (native) {  // MPI on the whole encoded vector (fp16): encode, allreduce, decode
      auto work = comm.scratch(Scratch::work, reduction.max_encoded_bytes(count));
      std::size_t bytes = 0;
      {
        PhaseScope timed(options.phases, &PhaseTimes::encode);
        bytes = reduction.encode(input, 0, work);
      }
      if (comm.size() > 1) {
        comm.transport().allreduce(work.first(bytes), native->type, native->op, timeout);
      }
      PhaseScope timed(options.phases, &PhaseTimes::decode);
      reduction.decode(work.first(bytes), 0, output);
      return;
    }

    const std::size_t parts = options.algorithm == Algorithm::halving_doubling
                                  ? halving_doubling_blocks(comm.size())
                                  : static_cast<std::size_t>(comm.size());
    const auto segments = split_range({0, count}, parts, granularity);
    SlotLayout layout(segments, chunks_for(segments, options.chunk_bytes), granularity, reduction);
    std::span<std::byte> work = identity ? std::as_writable_bytes(output)
                                         : comm.scratch(Scratch::work, layout.total_bytes());
    {
      PhaseScope timed(options.phases, &PhaseTimes::encode);
      encode_slots(reduction, layout, input, work);
    }
    if (options.algorithm == Algorithm::halving_doubling) {
      run_halving_doubling(comm, tag, layout, work, reduction, options, timeout);
    } else {
      run_ring(comm, tag, layout, work, &reduction, RingPhases::both, options, timeout,
               "ring allreduce");
    }
    PhaseScope timed(options.phases, &PhaseTimes::decode);
    decode_slots(reduction, layout, work, 0, layout.slot_count(), output, 0);
  });
}

}  // namespace qccl
