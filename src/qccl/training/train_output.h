// What rank 0 shows and writes while training: the progress line and the
// JSON-lines log.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>

#include "qccl/common/files.h"
#include "qccl/training/train_config.h"

namespace qccl::engines {

// Rank 0's progress line on stderr: redrawn in place on a terminal, a line
// every tenth of an epoch otherwise (logs stay readable).
class Progress {
 public:
  explicit Progress(bool enabled);
  void update(int epoch, int epochs, std::int64_t step, std::int64_t steps, double loss,
              double samples_per_second);
  void end_line();

 private:
  bool enabled_, terminal_;
};

// JSON lines, each written whole in one write, so a crash loses at most the
// line being written, and a full disk never leaves half a line: the write
// fails, the file is cut back to its last whole line, and IoError names the
// file. An empty path writes nothing. Opened for appending when resuming; an
// existing regular file is replaced only with `force` (InvalidArgument
// otherwise). A device or pipe (/dev/stdout) is written as it is.
class MetricLog {
 public:
  MetricLog(const std::string& path, bool resume, bool force);
  void write(const nlohmann::json& line);
  // Flushes the log to the disk at the end of a run; IoError on failure.
  void sync();

 private:
  std::unique_ptr<LineFile> file_;
};

// A run's summary as JSON: what --summary-json writes for each run and the
// log's summary line holds.
nlohmann::json summary_json(const TrainSummary& summary);
// What the MergeComp scheduler measured and chose (the log's "plan" event,
// the summary's "plan").
nlohmann::json plan_json(const PlanReport& report);

}  // namespace qccl::engines
