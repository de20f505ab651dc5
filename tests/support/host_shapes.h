// Hosts for the hierarchical collectives' tests: a shape (ranks, ranks per
// host), its name in a test's, and communicator options that put the ranks
// in consecutive hosts of that size.
#pragma once

#include <string>
#include <tuple>

#include "world.h"

namespace qccl::test {

using HostShape = std::tuple<int, int>;

inline std::string host_shape_name(const HostShape& shape) {
  return "n" + std::to_string(std::get<0>(shape)) + "_per_host" +
         std::to_string(std::get<1>(shape));
}

inline CommunicatorOptions with_hosts(int ranks_per_host) {
  CommunicatorOptions options{kTestTimeout, true};
  options.ranks_per_host = ranks_per_host;
  return options;
}

}  // namespace qccl::test
