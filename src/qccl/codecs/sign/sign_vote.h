// Sign compression with majority vote (MergeComp §2, §5, Table 1 baselines):
//
// - signsgd: signSGD with majority vote (Bernstein et al. 2018a, signSGD;
//   2018b, Algorithm 1 with beta = 0). Each rank sends sign(x), one bit per
//   element (x >= 0 counts as +1); the result on every rank is the vote
//   sign(sum_i sign(x_i)) in {-1, 0, +1}, 0 on a tie.
// - signum: Signum with majority vote (Bernstein et al. 2018b, Algorithm 1;
//   Signum itself in 2018a): each rank keeps, per tensor, the momentum
//   m <- beta*m + (1 - beta)*g and votes with sign(m).
//
// The result is the paper's update direction, not an estimate of the mean
// gradient: the optimizer applies it as it is, x <- x - lr*vote, so the
// learning rate must be chosen for steps of +/-1 per element (about 1e-4 to
// 1e-3; 2018b's default is 1e-4 with beta = 0.9), and for signum the
// optimizer must run without momentum of its own (the codec keeps it). There
// is no error bound against the mean: max_abs_error is infinite.
//
// Aggregation, chosen per step from the rank count n alone (so every rank
// takes the same path): the vote is counted either from gathered bits —
// every rank allgathers the others' packed signs, (n-1)*d/8 bytes sent per
// rank, and adds them in rank order — or in the compressed domain, the +/-1
// votes summed hop by hop as w-bit counters in a ring allreduce, 2(n-1)/n *
// w*d/8 bytes per rank. Summing is cheaper iff (n-1)/8 > 2(n-1)w/(8n), i.e.
// n > 2w: with int8 counters (valid up to 127 ranks) from 17 ranks on; with
// int32 counters beyond 127 ranks (n > 64 holds there). The same crossover
// holds for halving-doubling on a power of two (both send the same volume);
// elsewhere it is the ring's. Reduce-scatter likewise: the vote of a block,
// exchanged as bits or counted in transit. signsgd also offers an allgather
// of each shard's signs (+/-1 values); signum does not (its momentum is of a
// vector that is summed, not of a shard).
#pragma once

#include <memory>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/codec_spec.h"

namespace qccl {

// Whether the vote among `ranks` ranks is counted in transit (n > 16; see
// above) rather than from allgathered bits.
bool votes_counted_in_transit(int ranks);

std::unique_ptr<Codec> make_signsgd_codec(const SpecSyntax& spec, CodecSettings settings);
std::unique_ptr<Codec> make_signum_codec(const SpecSyntax& spec, CodecSettings settings);

}  // namespace qccl
