// Presents collective benchmark rows: an nccl-tests style table or JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "qccl/tools/collective_bench.h"

namespace qccl::tools {

struct BenchContext {
  BenchConfig config;
  int ranks = 1;
  std::string transport;  // "mpi (thread level multiple)" or "in-process"
};

void print_table(std::ostream& out, const BenchContext& context, const std::vector<BenchRow>& rows);
nlohmann::json to_json(const BenchContext& context, const std::vector<BenchRow>& rows);

}  // namespace qccl::tools
