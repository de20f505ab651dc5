// What rank 0 shows and writes while training: the progress line and the
// JSON-lines log.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <string>

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

// JSON lines, flushed line by line so a crash loses at most the line being
// written. An empty path writes nothing. Opened for appending when resuming;
// an existing file is replaced only with `force` (InvalidArgument otherwise).
class MetricLog {
 public:
  MetricLog(const std::string& path, bool resume, bool force);
  void write(const nlohmann::json& line);

 private:
  std::ofstream out_;
};

}  // namespace qccl::engines
