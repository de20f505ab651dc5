// Line charts and labelled scatter plots as standalone SVG text: no
// plotting library needed, and the files open in any browser. Used for the
// experiments' and tools' figures.
//
// Every series has its own colour and marker shape (the same in each panel
// and in the legend, matched by name); the legend lists the series with a
// point to show. The axes fit the data with a little room to spare and
// carry round ticks. Point labels never overlap one another, a marker or
// any other text, and stay inside their panel: a label with no room beside
// its point is moved to a free spot and joined to it by a line.
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

// Panels in rows of two in one SVG document, sharing one legend below.
std::string render_svg(const std::vector<PlotPanel>& panels);

}  // namespace qccl::tools
