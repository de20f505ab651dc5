// What a rank's checkpoint file holds, recorded in the file and checked
// before anything else is read from it: the run that wrote it, the rank and
// the rank count, and where each tensor the optimizer updates lies in the
// whole (sharded: this rank's shard of each group; data parallel: the whole
// tensor). A file's size and checksum, which the manifest records, tell a
// damaged file; they do not tell a file that is intact but in the wrong
// place — two ranks' files swapped together with their manifest entries, or
// a file copied in from another run. Its identity does: such a file is
// refused, naming the file, what it holds and what this rank expected.
//
// Torch-free.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "qccl/collectives/communicator.h"

namespace qccl::engines {

// Elements [first, end) of a tensor of `total` elements.
struct ShardBounds {
  std::int64_t first = 0, end = 0, total = 0;
  bool operator==(const ShardBounds&) const = default;
};

struct RankIdentity {
  std::uint64_t run = 0;  // chosen at a run's first start, kept across resumes
  int rank = 0, ranks = 0;
  std::vector<ShardBounds> shards;  // one per tensor the optimizer updates, in its order
};

// A fresh run identity, drawn by rank 0 and known to every rank afterwards
// (one small exchange; every rank calls it). Never 0.
std::uint64_t new_run_identity(Communicator& comm);

// The bounds of tensors that are whole on every rank (data parallel), of
// `sizes` elements each.
std::vector<ShardBounds> whole_tensors(std::span<const std::int64_t> sizes);
// The bounds of this rank's shards when each tensor is split into
// consecutive shards in rank order (the sharded engine's groups), from
// every rank's shard `sizes` (one small exchange; every rank calls it with
// as many sizes).
std::vector<ShardBounds> consecutive_shards(Communicator& comm,
                                            std::span<const std::int64_t> sizes);

// The identity as 64-bit words, as the file stores it, and back;
// identity_from_words throws InvalidArgument when the words are not one.
std::vector<std::int64_t> identity_words(const RankIdentity& identity);
RankIdentity identity_from_words(std::span<const std::int64_t> words);

// "rank 1 of 2 of run 5e1f09c2a3b4d6e8".
std::string describe(const RankIdentity& identity);

// InvalidArgument naming `file`, what it holds and what was expected, when
// `held` is not `expected`.
void check_identity(const std::string& file, const RankIdentity& held,
                    const RankIdentity& expected);

}  // namespace qccl::engines
