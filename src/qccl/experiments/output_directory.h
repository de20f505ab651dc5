// The output directory of an experiment, made ready before any training: a
// path that cannot be written fails every rank at once, not after the runs.
#pragma once

#include <string>
#include <vector>

#include "qccl/collectives/communicator.h"

namespace qccl::tools {

// Rank 0 creates `directory` (when not empty) and checks that each of
// `files` can be replaced; every rank then throws InvalidArgument with the
// cause if that failed, suggesting another `option`.
void prepare_output_directory(Communicator& comm, const std::string& directory,
                              const std::vector<std::string>& files, const std::string& option);

}  // namespace qccl::tools
