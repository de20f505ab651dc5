// Checking that the replicas still hold one model: every rank hashes its
// parameters (checksum64 over their bytes), and the hashes must agree.
// Data parallelism keeps them bitwise identical by construction; a damaged
// checkpoint file whose checksum was rewritten, a codec that decodes
// differently on some rank, or memory corruption breaks that silently —
// this check makes it an error. Libtorch-free: the caller hashes.
#pragma once

#include <cstdint>
#include <string_view>

#include "qccl/collectives/communicator.h"

namespace qccl::engines {

// Compares `checksum`, this rank's parameters' checksum, with every other
// rank's (one small exchange); when they differ, throws MismatchError on
// every rank naming `step`, `when` ("after resuming", "at a checkpoint")
// and which ranks hold which parameters.
void verify_replicas(Communicator& comm, std::uint64_t checksum, std::int64_t step,
                     std::string_view when);

}  // namespace qccl::engines
