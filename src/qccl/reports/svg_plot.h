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
#include <vector>

#include "qccl/reports/plot_data.h"

namespace qccl::tools {

// Panels in rows of two in one SVG document, sharing one legend below.
std::string render_svg(const std::vector<PlotPanel>& panels);

}  // namespace qccl::tools
