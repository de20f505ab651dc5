// Presents collective benchmark rows: an nccl-tests style table or JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
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

// The fraction of the wire bound a row reached: the time its bytes need on
// one link, sent bytes per rank / (link rate / 8), over its median time. The
// sent bytes are measured for qccl's algorithms; for native (MPI, whose
// traffic qccl cannot see) they are a bandwidth-optimal algorithm's,
// bus factor · S. Unset without a link rate.
std::optional<double> wire_fraction(const BenchContext& context, const BenchRow& row);

void print_table(std::ostream& out, const BenchContext& context, const std::vector<BenchRow>& rows);
nlohmann::json to_json(const BenchContext& context, const std::vector<BenchRow>& rows);

}  // namespace qccl::tools
