// Broadcast: every rank ends with the root's buffer.
#pragma once

#include <span>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

// Copies the root's `data` into `data` on every rank (same length everywhere).
void broadcast(Communicator& comm, std::span<float> data, int root,
               const CollectiveOptions& options = {});
void broadcast_bytes(Communicator& comm, std::span<std::byte> data, int root,
                     const CollectiveOptions& options = {});

}  // namespace qccl
QCCL_API_END
