// Which ranks share a host: the topology the hierarchical collectives
// (hierarchical.h) work with. Ranks on one host talk over shared memory;
// ranks on different hosts share their host's network card.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qccl/common/duration.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

class Transport;

class HostLayout {
 public:
  // One host per distinct key, numbered in the order of their lowest rank;
  // keys[r] is rank r's host key (Transport::host_key).
  static HostLayout from_keys(std::span<const int> keys);
  // `ranks` ranks in consecutive groups of `ranks_per_host` (the last host
  // takes what is left when it does not divide): rank r on host
  // r / ranks_per_host, as mpirun places ranks by slot.
  static HostLayout consecutive(int ranks, int ranks_per_host);

  int ranks() const { return static_cast<int>(host_of_.size()); }
  int hosts() const { return static_cast<int>(host_sizes_.size()); }
  int host_of(int rank) const { return host_of_[static_cast<std::size_t>(rank)]; }
  // Rank `rank`'s place among its host's ranks, in rank order.
  int local_rank(int rank) const { return local_rank_[static_cast<std::size_t>(rank)]; }
  int host_size(int host) const { return host_sizes_[static_cast<std::size_t>(host)]; }
  // The rank at place `local_rank` on host `host`.
  int rank_at(int host, int local_rank) const {
    return ranks_of_host_[static_cast<std::size_t>(host)][static_cast<std::size_t>(local_rank)];
  }
  // True when every host has the same number of ranks.
  bool uniform() const;
  // "2 hosts x 2 ranks", or "3 hosts of 2, 2, 1 ranks".
  std::string describe() const;
  // Throws InvalidArgument, naming `what`, the host sizes and the fix, unless
  // every host has the same number of ranks.
  void check_uniform(std::string_view what) const;

 private:
  std::vector<int> host_of_, local_rank_, host_sizes_;
  std::vector<std::vector<int>> ranks_of_host_;
};

// The layout of `transport`'s ranks: consecutive groups of
// `ranks_per_host` when it is positive, else what the transport knows of
// its hosts (host_key: shared memory under MPI; in process, one rank per
// host). Collective over the transport; bounded by `timeout`.
HostLayout discover_host_layout(Transport& transport, int ranks_per_host, Timeout timeout);

}  // namespace qccl
QCCL_API_END
