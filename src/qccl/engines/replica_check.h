// Checking that the replicas still hold one model: every rank hashes its
// parameters, and the hashes must agree. Data parallelism keeps them
// bitwise identical by construction; a damaged checkpoint file whose
// checksum was rewritten, a codec that decodes differently on some rank, or
// memory corruption breaks that silently — this check makes it an error.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "qccl/collectives/communicator.h"

namespace qccl::engines {

// A 64-bit checksum of the parameters' bytes, in order.
std::uint64_t parameters_checksum(const std::vector<torch::Tensor>& parameters);

// Compares this rank's parameters with every other rank's (one small
// exchange); when they differ, throws MismatchError on every rank naming
// `step`, `when` ("after resuming", "every 100 steps") and which ranks hold
// which parameters.
void verify_replicas(Communicator& comm, const std::vector<torch::Tensor>& parameters,
                     std::int64_t step, std::string_view when);

}  // namespace qccl::engines
