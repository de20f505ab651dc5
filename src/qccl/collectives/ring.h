// The ring schedule, shared by allreduce, reduce-scatter and allgather.
#pragma once

#include <span>
#include <string_view>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/options.h"
#include "qccl/collectives/reduction.h"

namespace qccl {

class CodecQueue;

enum class RingPhases { reduce_scatter, allgather, both };

// Runs ring phases over `layout` (one segment per rank, K chunks each) held in
// `work`. Reduce-scatter leaves rank r owning the fully reduced segment r;
// allgather starts from rank r owning segment r and leaves every segment
// everywhere. `reduction` may be null for allgather alone. With `codec`, the
// ring encodes and decodes the slots through it while transfers are in flight
// (see codec_queue.h); it returns with every slot encoded and every final slot
// decoded. Without one, `work` holds the encoded slots already.
void run_ring(Communicator& comm, int tag, SlotLayout& layout, std::span<std::byte> work,
              Reduction* reduction, RingPhases phases, const CollectiveOptions& options,
              Timeout timeout, std::string_view operation, CodecQueue* codec = nullptr);

}  // namespace qccl
