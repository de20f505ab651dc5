// The files `qccl experiment qsdp` writes (qsdp_experiment.h): a CSV and a
// JSON file with one row per variant, and an SVG with the variants'
// perplexity and step time side by side.
#pragma once

#include <string>
#include <vector>

#include "qccl/experiments/qsdp/qsdp_results.h"

namespace qccl::tools {

// DIR/qsdp.csv, DIR/qsdp.json and DIR/qsdp.svg.
std::vector<std::string> qsdp_output_files(const std::string& directory);

// Writes the three files (each replaced atomically); returns their paths.
std::vector<std::string> write_qsdp_outputs(const QsdpReport& report,
                                            const std::string& directory);

}  // namespace qccl::tools
