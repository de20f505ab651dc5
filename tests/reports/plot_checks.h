// The properties every plot must have to read well, checked on its SVG,
// and the crowded inputs the tests draw.
#pragma once

#include <string>
#include <vector>

#include "qccl/reports/svg_plot.h"
#include "svg_reading.h"

namespace qccl::tools::test {

// No two texts overlap; every text lies inside the canvas; no text covers
// a marker; no label's line crosses another or runs through a text.
void expect_readable(const SvgPlot& plot);

// A scatter panel of labelled points, each its own series named as its label.
struct LabelledPoint {
  std::string label;
  double x = 0, y = 0;
};
PlotPanel scatter_panel(const std::string& title, const std::vector<LabelledPoint>& points,
                        bool log_x = false);

// The recommender's 8 DDP hooks at 1 Gbit/s (docs/pytorch.md): one
// accuracy, eight close step times, long names.
std::vector<LabelledPoint> hook_runs();

// The 17 codecs on the CNN at 100 Mbit/s (docs/baselines.md), Rand-k's
// diverged run among them.
std::vector<LabelledPoint> codec_runs();

}  // namespace qccl::tools::test
