// The wire format of the 1-bit codecs that aggregate by allgather and
// decode (MergeComp §5, Table 1: SignSGD, SigNUM, EF-SignSGD and OneBit use
// allgather). Each element travels as one sign bit (sign_bits.h) and decodes
// to one of two levels of its tensor:
// - none: +1 / -1, no header (signSGD's and SigNUM's signs: Bernstein et al.
//   2018a, 2018b);
// - scale: +s / -s with s = ||p||_1 / d of the whole tensor (EF-SignSGD's
//   scaled sign, Karimireddy et al. 2019, Algorithm 1);
// - two_means: the mean of the tensor's non-negative elements for a set bit,
//   of its negative elements for a clear one (1-bit SGD, Seide et al. 2014).
// A chunk of elements [first, first + count) is encoded as the levels of
// every tensor it overlaps (one or two floats each, in tensor order) and then
// its count bits. The levels are the whole tensor's, computed once per step
// from the codec's whole input, not from the chunk: a tensor split across
// pipeline chunks or reduce-scatter blocks carries the same levels in each.
// Every rank has its own levels, so chunks are never summed in transit.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "qccl/collectives/encoding.h"

namespace qccl {

enum class SignHeader { none, scale, two_means };

// What a set bit (x >= 0) and a clear bit (x < 0) decode to.
struct SignLevels {
  float positive = 1.0f;
  float negative = -1.0f;
};

struct SignLevelsSetup {
  std::string name;  // for messages
  SignHeader header = SignHeader::none;
  // Tensor t holds elements [bounds[t], bounds[t + 1]) of the element space
  // the chunks' `first` counts in (the vector, or an allgather's output).
  // Ignored for SignHeader::none.
  std::vector<std::size_t> bounds{0, static_cast<std::size_t>(-1)};
  // Tensor t's levels; only those of tensors this rank encodes are read.
  std::vector<SignLevels> levels{SignLevels{}};
};

// Header bytes per tensor a chunk overlaps: 0, 4 or 8.
std::size_t sign_header_bytes(SignHeader header);

std::unique_ptr<Encoding> make_sign_levels_encoding(SignLevelsSetup setup);

}  // namespace qccl
