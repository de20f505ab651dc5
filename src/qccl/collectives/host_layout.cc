#include "qccl/collectives/host_layout.h"

#include <algorithm>
#include <map>

#include "qccl/common/errors.h"
#include "qccl/transport/transport.h"

namespace qccl {

HostLayout HostLayout::from_keys(std::span<const int> keys) {
  HostLayout layout;
  std::map<int, int> host_by_key;  // numbered in order of first appearance
  for (const int key : keys) {
    const auto [it, added] = host_by_key.emplace(key, static_cast<int>(host_by_key.size()));
    if (added) {
      layout.host_sizes_.push_back(0);
      layout.ranks_of_host_.emplace_back();
    }
    layout.ranks_of_host_[static_cast<std::size_t>(it->second)].push_back(
        static_cast<int>(layout.host_of_.size()));
    layout.host_of_.push_back(it->second);
    layout.local_rank_.push_back(layout.host_sizes_[static_cast<std::size_t>(it->second)]++);
  }
  return layout;
}

HostLayout HostLayout::consecutive(int ranks, int ranks_per_host) {
  if (ranks < 1 || ranks_per_host < 1) {
    throw InvalidArgument("host layout: needs at least one rank and one rank per host, got " +
                          std::to_string(ranks) + " ranks and " + std::to_string(ranks_per_host) +
                          " per host");
  }
  std::vector<int> keys;
  for (int r = 0; r < ranks; ++r) keys.push_back(r / ranks_per_host);
  return from_keys(keys);
}

bool HostLayout::uniform() const {
  return std::adjacent_find(host_sizes_.begin(), host_sizes_.end(), std::not_equal_to<>()) ==
         host_sizes_.end();
}

std::string HostLayout::describe() const {
  if (uniform()) {
    return std::to_string(hosts()) + (hosts() == 1 ? " host x " : " hosts x ") +
           std::to_string(host_sizes_.empty() ? 0 : host_sizes_[0]) +
           (host_sizes_.empty() || host_sizes_[0] != 1 ? " ranks" : " rank");
  }
  std::string sizes;
  for (const int size : host_sizes_) sizes += (sizes.empty() ? "" : ", ") + std::to_string(size);
  return std::to_string(hosts()) + " hosts of " + sizes + " ranks";
}

void HostLayout::check_uniform(std::string_view what) const {
  if (uniform()) return;
  throw InvalidArgument(std::string(what) + " needs the same number of ranks on every host, but " +
                        "the job runs on " + describe() +
                        ": start as many ranks on each host (mpirun's slots, or "
                        "--ranks-per-host dividing the rank count), or use ring or "
                        "halving-doubling");
}

HostLayout discover_host_layout(Transport& transport, int ranks_per_host, Timeout timeout) {
  if (ranks_per_host > 0) return HostLayout::consecutive(transport.size(), ranks_per_host);
  const int mine = transport.host_key(timeout);
  std::vector<int> keys(static_cast<std::size_t>(transport.size()));
  const std::vector<std::size_t> counts(keys.size(), sizeof(int));
  transport.allgather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(keys)),
                      counts, timeout);
  return HostLayout::from_keys(keys);
}

}  // namespace qccl
