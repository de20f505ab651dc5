// The files of `qccl experiment intsgd-rounding`, and merging the files of
// several invocations (e.g. one per seed or per model) into one report.
//
// - intsgd-rounding.csv: a line per evaluation of every run: model,
//   variant, codec, seed, step, train_loss, test_loss, metric_name, metric
//   (a diverged run: one line with diverged=1 and no step);
// - intsgd-rounding.json: the settings of each model, every run's curve,
//   and the rows (mean and spread over the seeds);
// - intsgd-rounding.svg: per model, the training loss and the test metric
//   against the step, each variant's mean over its seeds.
#pragma once

#include <string>
#include <vector>

#include "qccl/experiments/intsgd/rounding_results.h"

namespace qccl::tools {

// The three paths in `directory`: .csv, .json, .svg.
std::vector<std::string> rounding_output_files(const std::string& directory);

// Writes the three files; returns their paths.
std::vector<std::string> write_rounding_outputs(const RoundingReport& report,
                                                const std::string& directory);

// The report of earlier invocations' JSON files, their runs together and
// the rows recomputed. InvalidArgument names the file when one cannot be
// read, when two ran the same model with other settings or on another
// number of ranks, or when two hold the same model, variant and seed.
RoundingReport merge_rounding_results(const std::vector<std::string>& json_files);

}  // namespace qccl::tools
