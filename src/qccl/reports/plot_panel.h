// One panel of a plot: its axes, frame, ticks, series and point labels, at
// a place on the canvas that svg_plot.cc lays out.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "qccl/reports/plot_axis.h"
#include "qccl/reports/plot_data.h"
#include "qccl/reports/plot_geometry.h"
#include "qccl/reports/plot_style.h"

namespace qccl::tools {

// Font sizes (pixels) and the marker's radius.
inline constexpr double kTitleSize = 14, kAxisLabelSize = 12, kTickSize = 11;
inline constexpr double kPointLabelSize = 11, kLegendSize = 12, kMarkerRadius = 4.5;

// Where one panel goes on the canvas.
struct PanelFrame {
  double left = 0, top = 0;  // its cell's corner
  Box plot;                             // the plotting area, inside the cell
  std::vector<std::string> title;       // its lines
};

// Each series' style, by name.
using SeriesStyles = std::map<std::string, SeriesStyle>;

// The panel's axes over a plotting area `length` pixels wide or high.
Axis panel_x_axis(const PlotPanel& panel, double length);
Axis panel_y_axis(const PlotPanel& panel, double length);

// The widest of an axis's tick labels, in pixels.
double widest_tick(const Axis& axis);

// Draws the whole panel into `svg`.
void draw_panel(std::ostream& svg, const PlotPanel& panel, const PanelFrame& frame, const Axis& x,
                const Axis& y, const SeriesStyles& styles);

}  // namespace qccl::tools
