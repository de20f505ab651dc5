// Allreduce: every rank ends with the reduction of all ranks' vectors.
#pragma once

#include <span>

#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"
#include "qccl/collectives/reduction.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

// Reduces `input` across ranks into `output` (same length on every rank; pass
// the same span twice, or use the overload below, for in place). With a
// codec's reduction the data is encoded once, reduced hop by hop in encoded
// form, and decoded once; every rank ends with bitwise identical output.
// Throws InvalidArgument for bad local arguments, MismatchError when ranks
// disagree, TimeoutError/CommError when communication fails.
void allreduce(Communicator& comm, std::span<const float> input, std::span<float> output,
               Reduction& reduction, const CollectiveOptions& options = {});

inline void allreduce(Communicator& comm, std::span<float> data, Reduction& reduction,
                      const CollectiveOptions& options = {}) {
  allreduce(comm, data, data, reduction, options);
}

// Checks allreduce's local arguments; throws InvalidArgument.
void validate_allreduce(std::span<const float> input, std::span<const float> output,
                        const Reduction& reduction, const CollectiveOptions& options);

// The data movement of an allreduce inside a checked call (CollectiveCall):
// encode, ring or halving-doubling (or the transport's own allreduce for
// algorithm native), decode. With a non-empty `own` (as long as the input),
// this rank's own quantized input, Q(input), is written there.
void allreduce_body(Communicator& comm, int tag, std::span<const float> input,
                    std::span<float> output, Reduction& reduction,
                    const CollectiveOptions& options, std::span<float> own = {});

}  // namespace qccl
QCCL_API_END
