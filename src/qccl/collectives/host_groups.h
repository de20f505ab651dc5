// A communicator's two levels for the hierarchical collectives: the ranks
// of this rank's host, and the ranks across hosts that hold the same place
// on theirs (one per host). Made once per communicator, when its first
// hierarchical call needs them (Communicator::host_groups).
#pragma once

#include <memory>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/host_layout.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

class HostGroups {
 public:
  // Splits `world`'s transport in two (collective over `world`'s ranks,
  // bounded by its timeout). The layout must give every host the same
  // number of ranks.
  HostGroups(Communicator& world, HostLayout layout);

  const HostLayout& layout() const { return layout_; }
  int hosts() const { return layout_.hosts(); }
  // Ranks per host.
  int local_size() const { return local_->size(); }
  int host() const { return host_; }
  int local_rank() const { return local_->rank(); }
  // This rank's host: its ranks in world rank order.
  Communicator& local() { return *local_; }
  // One rank per host, the ones with this rank's local rank, in host order
  // (so its rank is this rank's host).
  Communicator& across() { return *across_; }

 private:
  HostLayout layout_;
  int host_ = 0;
  std::unique_ptr<Transport> local_transport_, across_transport_;
  std::unique_ptr<Communicator> local_, across_;
};

}  // namespace qccl
QCCL_API_END
