// Allgather: every rank ends with every rank's contribution, in rank order.
#pragma once

#include <span>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/options.h"
#include "qccl/collectives/encoding.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

// Every rank contributes input (same length everywhere); output holds the
// contributions of ranks 0..n-1 back to back (n * input.size() elements).
// Algorithms ring, halving-doubling (recursive doubling) and native
// (MPI_Allgather).
void allgather(Communicator& comm, std::span<const float> input, std::span<float> output,
               const CollectiveOptions& options = {});

// Contributions of different lengths: rank r contributes counts[r] elements
// (input.size() must equal counts[rank]); every rank passes the same counts.
void allgatherv(Communicator& comm, std::span<const float> input,
                std::span<const std::size_t> counts, std::span<float> output,
                const CollectiveOptions& options = {});

// The same for raw bytes (encoded data whose size differs per rank): up to
// 16 ranks in one round, each rank's bytes sent straight to every other
// rank; beyond, on the ring.
void allgatherv_bytes(Communicator& comm, std::span<const std::byte> input,
                      std::span<const std::size_t> byte_counts, std::span<std::byte> output,
                      const CollectiveOptions& options = {});

// The allgather of raw bytes inside a checked call (one direct round up to
// 16 ranks, else the ring).
void allgatherv_bytes_body(Communicator& comm, int tag, std::span<const std::byte> input,
                           std::span<const std::size_t> byte_counts, std::span<std::byte> output,
                           const CollectiveOptions& options);

// Every rank's `count` (one small allreduce: one round up to 16 ranks), for
// allgatherv when the ranks do not know each other's lengths in advance.
std::vector<std::size_t> allgather_counts(Communicator& comm, std::size_t count,
                                          const CollectiveOptions& options = {});
// The same inside a checked call, on its tag (point to point, so a cancelled
// stream stops it).
std::vector<std::size_t> allgather_counts_body(Communicator& comm, int tag, std::size_t count,
                                               Timeout timeout);

// The data movement of an encoded allgather inside a checked call: this rank
// encodes its shard (elements shards[rank] of the output) once, the
// encodings travel around the ring or by recursive doubling (or through the
// transport's own allgather for algorithm native), and every rank decodes
// every shard into `output` — the same bytes through the same decoder, so
// every rank ends with bitwise identical values. With a non-empty `own` (as
// long as the shard), this rank's decoded shard, Q(shard), is written there.
void allgather_body(Communicator& comm, int tag, std::span<const float> shard,
                    std::span<const Range> shards, std::span<float> output, Encoding& encoding,
                    const CollectiveOptions& options, std::span<float> own = {});

}  // namespace qccl
QCCL_API_END
