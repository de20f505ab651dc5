#include "qccl/engines/train_output.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "qccl/common/errors.h"

namespace qccl::engines {

Progress::Progress(bool enabled)
    : enabled_(enabled), terminal_(enabled && isatty(STDERR_FILENO) == 1) {}

void Progress::update(int epoch, int epochs, std::int64_t step, std::int64_t steps, double loss,
                      double samples_per_second) {
  if (!enabled_) return;
  const bool milestone = steps < 10 || (step + 1) % (steps / 10) == 0 || step + 1 == steps;
  if (!terminal_ && !milestone) return;
  const int width = 30;
  const int filled = static_cast<int>(width * (step + 1) / std::max<std::int64_t>(steps, 1));
  std::ostringstream line;
  line << "epoch " << epoch + 1 << "/" << epochs << " [" << std::string(filled, '=')
       << std::string(width - filled, ' ') << "] " << step + 1 << "/" << steps << "  loss "
       << std::fixed << std::setprecision(4) << loss << "  " << std::setprecision(0)
       << samples_per_second << " samples/s";
  std::cerr << (terminal_ ? "\r" : "") << line.str() << (terminal_ ? "" : "\n") << std::flush;
}

void Progress::end_line() {
  if (terminal_) std::cerr << "\n";
}

MetricLog::MetricLog(const std::string& path, bool resume, bool force) {
  if (path.empty()) return;
  if (!resume && !force && std::filesystem::exists(path)) {
    throw InvalidArgument("log '" + path + "' exists; pass --resume to append to it, --force "
                          "to replace it, or choose another --log");
  }
  out_.open(path, resume ? std::ios::app : std::ios::trunc);
  if (!out_) throw InvalidArgument("cannot write the log '" + path + "'");
}

void MetricLog::write(const nlohmann::json& line) {
  if (out_.is_open()) out_ << line.dump() << "\n" << std::flush;
}

}  // namespace qccl::engines
