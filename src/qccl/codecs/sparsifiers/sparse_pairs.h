// The (index, value) encoding of a sparsifier whose ranks keep different
// elements (Top-k, DGC): MergeComp Table 1 aggregates them by allgather,
// since pairs from different ranks cannot be summed in transit (MergeComp §3.1:
// "allreduce does not support sparse tensors"). Each rank's encoding of a
// chunk [first, first + count) is
//   [uint32 pair count p][p × uint32 index − first, increasing][p × fp32 value]
// holding the selected elements that fall inside the chunk; every rank
// decodes every rank's chunks into zeros plus the pairs, and the
// allgather-decode bodies (decode_sum.h, allgather.h) add them in rank order.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "qccl/collectives/encoding.h"

namespace qccl {

class SparsePairsEncoding final : public Encoding {
 public:
  // `selected`: this rank's kept positions in the collective's element
  // space (increasing). `max_pairs`: the most positions any rank keeps in
  // this step — the same on every rank, so that every rank reserves room
  // for every rank's chunks.
  SparsePairsEncoding(std::string name, std::vector<std::size_t> selected, std::size_t max_pairs);

  std::string name() const override { return name_; }
  std::size_t max_encoded_bytes(std::size_t count) const override;
  // Returns 4 + 8·p.
  std::size_t encode(std::span<const float> in, std::size_t first,
                     std::span<std::byte> out) override;
  // Rejects with CommError: fewer than 4 bytes, a size other than 4 + 8·p,
  // p above the chunk's element count, an index not below it or not
  // increasing.
  void decode(std::span<const std::byte> in, std::size_t first, std::span<float> out) override;
  // One rank's pairs are its contribution as they are.
  void decode_contribution(std::span<const std::byte> in, std::size_t first,
                           std::span<float> out) override {
    decode(in, first, out);
  }

  const std::vector<std::size_t>& selected() const { return selected_; }

 private:
  std::string name_;
  std::vector<std::size_t> selected_;
  std::size_t max_pairs_;
};

// Bytes of a chunk holding `pairs` pairs.
constexpr std::size_t sparse_pairs_bytes(std::size_t pairs) { return 4 + 8 * pairs; }

}  // namespace qccl
