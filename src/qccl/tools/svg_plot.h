// Line charts as standalone SVG text: no plotting library needed, and the
// files open in any browser. Used for the experiments' figures.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace qccl::tools {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y)
};

struct PlotPanel {
  std::string title, x_label, y_label;
  bool log_y = false;  // points with y <= 0 are left out of a log axis
  bool log_x = false;  // likewise for x
  std::vector<PlotSeries> series;
};

// Panels side by side in one SVG document, sharing one legend.
std::string render_svg(const std::vector<PlotPanel>& panels);

// Writes `text` to `path` through a temporary file and a rename, so a failed
// run never leaves a truncated file behind. Throws InvalidArgument naming the
// path when it cannot be written.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace qccl::tools
