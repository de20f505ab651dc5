// What a plot shows: panels of series of (x, y) points, with their titles,
// axis labels and the options of each axis (svg_plot.h draws them).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace qccl::tools {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y)
  // A marker at each point; else a line through them, with a marker on a
  // few of them (a series of one point is only a marker).
  bool markers = false;
  // Optional: the text written beside each point ("" for none), one per
  // point in `points`.
  std::vector<std::string> labels = {};
};

struct PlotPanel {
  std::string title, x_label, y_label;  // axis labels with their units: "ms per step"
  bool log_y = false;                   // points with y <= 0 are left out of a log axis
  bool log_x = false;                   // likewise for x
  std::vector<PlotSeries> series;
  // A few points far from all others on y (a run that diverged) are drawn
  // on the panel's edge, labelled with their value, so that the y axis can
  // fit the rest rather than flatten them.
  bool off_scale_outliers = false;
};

}  // namespace qccl::tools
