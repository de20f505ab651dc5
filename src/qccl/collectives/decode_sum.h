// Allreduce and reduce-scatter for encodings that cannot be combined in
// transit — QSGD scales each rank's buckets by that rank's own norms —
// so every encoding travels as it is to the ranks that need it, which decode
// each one and add them up in rank order: the same values in the same order
// on every rank that holds a result, so those ranks agree bit for bit.
// Encoding::decode of one rank's encoding gives that rank's Q(x); these
// bodies return the sum over ranks divided by `divide_by`: the fp32 sum in
// rank order, then one fp32 division. With divide_by > 1 (a mean) an
// element whose fp32 sum overflowed is summed again in double and divided
// there, so a mean of values near fp32's largest is finite; with
// divide_by = 1 (counts a codec scales itself) the sum must fit in fp32.
#pragma once

#include <span>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/options.h"
#include "qccl/collectives/encoding.h"

namespace qccl {

// Every rank encodes its whole input once; the encodings are allgathered
// (ring, or recursive doubling for algorithm halving-doubling); every rank
// decodes each and adds them in rank order into `output`.
void allreduce_by_allgather_body(Communicator& comm, int tag, std::span<const float> input,
                                 std::span<float> output, Encoding& encoding,
                                 const CollectiveOptions& options, std::span<float> own = {},
                                 int divide_by = 1);

// Every rank encodes its input once, block by block, and sends block q's
// encoding straight to rank q (a pairwise exchange: (n−1)/n of the encoded
// input per rank, what a ring reduce-scatter sends); rank r decodes the n
// encodings of its block and adds them in rank order into `output`.
void reduce_scatter_by_exchange_body(Communicator& comm, int tag, std::span<const float> input,
                                     std::span<const Range> blocks, std::span<float> output,
                                     Encoding& encoding, const CollectiveOptions& options,
                                     std::span<float> own = {}, int divide_by = 1);

}  // namespace qccl
