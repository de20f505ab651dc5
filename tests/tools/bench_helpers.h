// Runs the collective benchmark on in-process ranks and returns rank 0's rows.
#pragma once

#include <vector>

#include "../support/world.h"
#include "qccl/tools/collective_bench.h"

namespace qccl::tools {

inline std::vector<BenchRow> run_bench(int ranks, const BenchConfig& config) {
  std::vector<BenchRow> rows;
  test::run_world(ranks, [&](Communicator& comm) {
    auto mine = run_collective_bench(comm, config);
    if (comm.rank() == 0) rows = mine;
  });
  return rows;
}

}  // namespace qccl::tools
