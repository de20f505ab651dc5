// The files of a grid of runs (`qccl experiment intsgd-rounding`,
// `global-qsgd-quality`), named after the experiment, and merging the
// files of several invocations (e.g. one per seed or per model) into one
// report.
//
// - NAME.csv: a line per evaluation of every run: model, variant, codec,
//   seed, step, train_loss, test_loss, metric_name, metric (a diverged
//   run: one line with diverged=1 and no step);
// - NAME.json: the settings of each model, every run's curve, and the rows
//   (mean and spread over the seeds);
// - NAME.svg: per model, the training loss and the test metric against the
//   step, each variant's mean over its seeds.
#pragma once

#include <string>
#include <vector>

#include "qccl/experiments/intsgd/rounding_results.h"

namespace qccl::tools {

// The three paths in `directory`: NAME.csv, NAME.json, NAME.svg.
std::vector<std::string> rounding_output_files(const std::string& directory,
                                               const std::string& experiment = "intsgd-rounding");

// Writes the three files of report.experiment; returns their paths.
std::vector<std::string> write_rounding_outputs(const RoundingReport& report,
                                                const std::string& directory);

// The report of earlier invocations' JSON files of `experiment`, their
// runs together and the rows recomputed against `baseline`.
// InvalidArgument names the file when one cannot be read or is another
// experiment's, when two ran the same model with other settings or on
// another number of ranks, or when two hold the same model, variant and
// seed.
RoundingReport merge_rounding_results(const std::vector<std::string>& json_files,
                                      const std::string& experiment = "intsgd-rounding",
                                      const std::string& baseline = "sgd");

}  // namespace qccl::tools
