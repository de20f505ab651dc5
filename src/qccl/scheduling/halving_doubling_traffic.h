// Where qccl's halving-doubling allreduce sends its bytes when several ranks
// share a host: round by round, what the busiest card carries and what one
// rank moves within its host. The model of host_link_model.h sums these.
#pragma once

#include "qccl/scheduling/host_link_model.h"

namespace qccl {

// The network and local terms (steps and bytes) of the halving-doubling
// allreduce of `encoded_bytes` on `shape` (ranks host by host); reduce and
// codec terms are left 0.
HostLinkTerms halving_doubling_traffic(HostShape shape, double encoded_bytes);

}  // namespace qccl
