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
  bool markers = false;  // a dot at each point (a series of one point is only a dot)
};

struct PlotPanel {
  std::string title, x_label, y_label;
  bool log_y = false;  // points with y <= 0 are left out of a log axis
  bool log_x = false;  // likewise for x
  std::vector<PlotSeries> series;
};

// Panels side by side in one SVG document, sharing one legend.
std::string render_svg(const std::vector<PlotPanel>& panels);

}  // namespace qccl::tools
