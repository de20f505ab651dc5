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

#include <cmath>
#include <span>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/options.h"
#include "qccl/collectives/encoding.h"

namespace qccl {

// sum[i] /= divide_by in fp32, element by element (divide_by 1: nothing).
// The decoded values are finite, so a non-finite sum is an overflow: those
// elements are summed again in double — decode_rank(q, scratch) writes
// rank q's decoded values of the same elements, q = 0..ranks−1 — and
// divided there; |mean| <= the largest decoded value, so it is finite in
// fp32 too. Ranks are decoded a second time only then.
template <class DecodeRank>
void divide_sums(std::span<float> sum, int divide_by, std::size_t ranks, std::span<float> scratch,
                 DecodeRank&& decode_rank) {
  if (divide_by == 1) return;
  std::vector<std::size_t> overflowed;
  const auto n = static_cast<float>(divide_by);
  for (std::size_t i = 0; i < sum.size(); ++i) {
    if (!std::isfinite(sum[i])) overflowed.push_back(i);
    sum[i] /= n;
  }
  if (overflowed.empty()) return;
  std::vector<double> sums(overflowed.size(), 0.0);
  for (std::size_t q = 0; q < ranks; ++q) {
    decode_rank(q, scratch);
    for (std::size_t j = 0; j < overflowed.size(); ++j) sums[j] += scratch[overflowed[j]];
  }
  for (std::size_t j = 0; j < overflowed.size(); ++j) {
    sum[overflowed[j]] = static_cast<float>(sums[j] / divide_by);
  }
}

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
