// `qccl bench training-report DIR`: turns a scripts/compare-codecs folder —
// one `qccl train` summary per (model, link rate, codec) — into one table
// and one plot, so a researcher sees which scheme wins where: accuracy,
// ms/step and bytes sent per step, each against fp32 on the same model and
// link.
#pragma once

#include <string>
#include <vector>

namespace qccl::tools {

struct ComparisonRun {
  std::string model, rate, codec;
  std::string settings;  // the training options this codec ran with (lr, momentum, ...)
  double accuracy = 0;           // final test accuracy, 0..1
  double test_loss = 0;          // final test loss (moves before accuracy on short runs)
  double ms_per_step = 0;        // mean wall time of a training step (evaluation excluded)
  double sent_bytes_per_step = 0;  // bytes rank 0 sent per step
  std::size_t steps = 0;
};

// Reads DIR/runs.tsv (model, rate, codec, settings, summary file; one run a
// line, tab-separated) and each summary JSON it names. Throws InvalidArgument
// naming the file and line for anything missing or malformed.
std::vector<ComparisonRun> load_comparison(const std::string& directory);

// The report as Markdown: per (model, rate), one table of every codec with
// its accuracy, the change against fp32 in points, its test loss, ms/step,
// the speed-up over fp32 and the bytes sent per step.
std::string comparison_markdown(const std::vector<ComparisonRun>& runs);

// Writes comparison.md, comparison.csv and comparison.svg (accuracy against
// ms/step, one panel per model and rate) into `directory`; returns the files.
std::vector<std::string> write_comparison_report(const std::vector<ComparisonRun>& runs,
                                                 const std::string& directory);

}  // namespace qccl::tools
