#include "qccl/training/checkpoint_identity.h"

#include <unistd.h>

#include <chrono>
#include <random>

#include "qccl/common/checksum.h"
#include "qccl/common/errors.h"
#include "qccl/engines/rank_agreement.h"

namespace qccl::engines {
namespace {

constexpr std::int64_t kIdentityVersion = 1;
constexpr std::size_t kHeaderWords = 5;  // version, run, rank, ranks, shard count

std::string bounds_text(const ShardBounds& b) {
  return "[" + std::to_string(b.first) + ", " + std::to_string(b.end) + ") of " +
         std::to_string(b.total);
}

[[noreturn]] void misplaced(const std::string& file, const std::string& holds,
                            const std::string& expected) {
  throw InvalidArgument("'" + file + "' holds " + holds + "; this rank expected " + expected +
                        ": rank files were swapped, renamed or copied from another checkpoint");
}

}  // namespace

// The operating system's randomness, with the clock and the process id
// folded in (std::random_device may be a fixed sequence where the system
// offers none), so that two runs started together still differ.
std::uint64_t new_run_identity(Communicator& comm) {
  std::int64_t drawn = 0;
  if (comm.rank() == 0) {
    std::random_device device;
    std::uint64_t id = (static_cast<std::uint64_t>(device()) << 32) ^ device();
    id ^= static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
    id = checksum64(std::as_bytes(std::span(&id, 1)),
                    static_cast<std::uint64_t>(::getpid()) + kChecksumSeed);
    drawn = static_cast<std::int64_t>(id == 0 ? 1 : id);
  }
  return static_cast<std::uint64_t>(rows_of_ranks(comm, std::span(&drawn, 1), "run identity")[0]);
}

std::vector<ShardBounds> whole_tensors(std::span<const std::int64_t> sizes) {
  std::vector<ShardBounds> bounds;
  for (const auto n : sizes) bounds.push_back({0, n, n});
  return bounds;
}

// Rank r's shard of tensor i starts where the shards of ranks 0..r-1 end.
std::vector<ShardBounds> consecutive_shards(Communicator& comm,
                                            std::span<const std::int64_t> sizes) {
  const auto table = rows_of_ranks(comm, sizes, "checkpoint shard sizes");
  const std::size_t k = sizes.size();
  std::vector<ShardBounds> bounds(k);
  for (std::size_t i = 0; i < k; ++i) {
    for (int r = 0; r < comm.size(); ++r) {
      const auto size = table[static_cast<std::size_t>(r) * k + i];
      if (r < comm.rank()) bounds[i].first += size;
      bounds[i].total += size;
    }
    bounds[i].end = bounds[i].first + sizes[i];
  }
  return bounds;
}

std::vector<std::int64_t> identity_words(const RankIdentity& identity) {
  std::vector<std::int64_t> words{kIdentityVersion, static_cast<std::int64_t>(identity.run),
                                  identity.rank, identity.ranks,
                                  static_cast<std::int64_t>(identity.shards.size())};
  for (const auto& b : identity.shards) words.insert(words.end(), {b.first, b.end, b.total});
  return words;
}

RankIdentity identity_from_words(std::span<const std::int64_t> words) {
  if (words.size() < kHeaderWords || words[0] != kIdentityVersion ||
      words[4] < 0 || words.size() != kHeaderWords + 3 * static_cast<std::size_t>(words[4])) {
    throw InvalidArgument("its identity is not one this qccl writes (version " +
                          std::to_string(words.empty() ? 0 : words[0]) + ", " +
                          std::to_string(words.size()) + " words)");
  }
  RankIdentity identity{static_cast<std::uint64_t>(words[1]), static_cast<int>(words[2]),
                        static_cast<int>(words[3]), {}};
  for (std::size_t at = kHeaderWords; at < words.size(); at += 3) {
    identity.shards.push_back({words[at], words[at + 1], words[at + 2]});
  }
  return identity;
}

std::string describe(const RankIdentity& identity) {
  return "rank " + std::to_string(identity.rank) + " of " + std::to_string(identity.ranks) +
         " of run " + checksum_text(identity.run);
}

void check_identity(const std::string& file, const RankIdentity& held,
                    const RankIdentity& expected) {
  if (held.run != expected.run || held.rank != expected.rank || held.ranks != expected.ranks) {
    misplaced(file, describe(held), describe(expected));
  }
  if (held.shards.size() != expected.shards.size()) {
    misplaced(file, std::to_string(held.shards.size()) + " tensors",
              std::to_string(expected.shards.size()));
  }
  for (std::size_t i = 0; i < held.shards.size(); ++i) {
    if (held.shards[i] == expected.shards[i]) continue;
    misplaced(file, "elements " + bounds_text(held.shards[i]) + " of tensor " + std::to_string(i),
              "elements " + bounds_text(expected.shards[i]) + " (this rank's shard)");
  }
}

}  // namespace qccl::engines
