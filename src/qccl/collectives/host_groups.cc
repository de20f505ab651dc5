#include "qccl/collectives/host_groups.h"

#include "qccl/common/errors.h"

namespace qccl {

HostGroups::HostGroups(Communicator& world, HostLayout layout) : layout_(std::move(layout)) {
  layout_.check_uniform("the hierarchical algorithm");
  const int rank = world.rank();
  host_ = layout_.host_of(rank);
  const Timeout timeout = world.options().timeout;
  Transport& transport = world.transport();
  local_transport_ = transport.split(host_, rank, timeout);
  across_transport_ = transport.split(layout_.local_rank(rank), host_, timeout);
  CommunicatorOptions options = world.options();
  local_ = std::make_unique<Communicator>(*local_transport_, options, world.name() + "/host");
  across_ = std::make_unique<Communicator>(*across_transport_, options,
                                           world.name() + "/across hosts");
}

}  // namespace qccl
