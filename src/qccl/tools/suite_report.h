// `qccl bench report DIR`: turns a benchmark-suite folder into results.md
// (speed-ups over MPI_Allreduce fp32 measured in the same run and fractions
// of the wire bound, per cluster), suite.json (every row, flattened) and SVG
// plots (time vs size per cluster, speed-up vs link rate per host count).
#pragma once

#include <string>
#include <vector>

#include "qccl/tools/suite_data.h"

namespace qccl::tools {

// Writes the report next to the data; returns the files written.
std::vector<std::string> write_suite_report(const SuiteData& data, const std::string& directory);

// The size the summaries use: 64 MiB if measured, else the largest size.
double summary_bytes(const SuiteData& data);

}  // namespace qccl::tools
