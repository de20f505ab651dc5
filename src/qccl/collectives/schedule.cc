#include "qccl/collectives/schedule.h"

#include <string>

#include "qccl/collectives/halving_doubling.h"
#include "qccl/collectives/ring.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

RingPhases ring_phases(SchedulePhases phases) {
  switch (phases) {
    case SchedulePhases::allreduce: return RingPhases::both;
    case SchedulePhases::reduce_scatter: return RingPhases::reduce_scatter;
    case SchedulePhases::allgather: return RingPhases::allgather;
  }
  return RingPhases::both;
}

HalvingDoublingPhases halving_doubling_phases(SchedulePhases phases) {
  switch (phases) {
    case SchedulePhases::allreduce: return HalvingDoublingPhases::allreduce;
    case SchedulePhases::reduce_scatter: return HalvingDoublingPhases::reduce_scatter;
    case SchedulePhases::allgather: return HalvingDoublingPhases::allgather;
  }
  return HalvingDoublingPhases::allreduce;
}

}  // namespace

bool overlaps_codec(const Encoding& encoding, const CollectiveOptions& options) {
  return options.algorithm == Algorithm::ring && !encoding.identity_layout();
}

void run_schedule(Communicator& comm, int tag, SlotLayout& layout, std::span<std::byte> work,
                  Reduction* reduction, SchedulePhases phases, const CollectiveOptions& options,
                  Timeout timeout, std::string_view what, CodecQueue* codec) {
  if (codec != nullptr && options.algorithm != Algorithm::ring) {
    throw InvalidArgument(std::string(what) + ": only the ring encodes while it transfers");
  }
  const std::string operation = std::string(to_string(options.algorithm)) + " " + std::string(what);
  switch (options.algorithm) {
    case Algorithm::ring:
      run_ring(comm, tag, layout, work, reduction, ring_phases(phases), options, timeout,
               operation, codec);
      return;
    case Algorithm::halving_doubling:
      run_halving_doubling(comm, tag, layout, work, reduction, halving_doubling_phases(phases),
                           options, timeout, operation);
      return;
    case Algorithm::native:
    case Algorithm::hierarchical: break;
  }
  throw InvalidArgument(operation + ": the " + std::string(to_string(options.algorithm)) +
                        " algorithm has no schedule of one level: callers run the transport's "
                        "own collective (native) or the two levels (hierarchical) instead");
}

}  // namespace qccl
