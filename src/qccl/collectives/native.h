// The transport's own collectives (MPI_Allreduce, MPI_Reduce_scatter_block,
// MPI_Allgather) for reductions that declare an equivalent: the uncompressed
// baselines every benchmark measures beside qccl's algorithms, and MPI over
// an fp16 encoding. Each runs inside a checked call, like the other bodies.
#pragma once

#include <span>
#include <string_view>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/options.h"
#include "qccl/collectives/reduction.h"

namespace qccl {

// Throws InvalidArgument naming `operation` unless `reduction` has a native
// equivalent whose encoding is one transport element per vector element.
void check_native(const Reduction& reduction, std::string_view operation);

// Encode, the transport's collective, decode (nothing to encode for fp32).
// `own`, when non-empty, receives Q(input) as in the other bodies.
void native_allreduce(Communicator& comm, std::span<const float> input, std::span<float> output,
                      Reduction& reduction, const CollectiveOptions& options,
                      std::span<float> own);
void native_reduce_scatter(Communicator& comm, std::span<const float> input,
                           std::span<const Range> blocks, std::span<float> output,
                           Reduction& reduction, const CollectiveOptions& options,
                           std::span<float> own);
void native_allgather(Communicator& comm, std::span<const float> shard,
                      std::span<const Range> shards, std::span<float> output, Encoding& encoding,
                      const CollectiveOptions& options, std::span<float> own);

}  // namespace qccl
