// Reads back what a plot's SVG draws, for the checks on it: every text
// with the box it covers, every marker with its series and style, the
// legend's entries and the point labels' lines.
#pragma once

#include <string>
#include <vector>

#include "qccl/reports/plot_geometry.h"

namespace qccl::tools::test {

struct SvgText {
  std::string text;  // unescaped
  double x = 0, y = 0, font_size = 0;
  std::string anchor;    // "start", "middle" or "end"
  bool rotated = false;  // turned a quarter anticlockwise about (x, y)
  Box box;               // what it covers, by the renderer's width estimate
  bool in_legend = false;
};

struct SvgMarker {
  std::string series;  // the title of the group it is in ("" in the legend)
  std::string colour, shape;
  Box box;  // of its outline
  bool in_legend = false;
};

struct SvgLine {
  Point from, to;
};

struct SvgPlot {
  double width = 0, height = 0;
  std::vector<SvgText> texts;
  std::vector<SvgMarker> markers;
  std::vector<std::string> series;  // the titles of the series' groups, in order
  std::vector<SvgLine> leaders;     // lines from points to their labels
  std::vector<Box> plot_areas;      // the panels' framed plotting areas
};

// Parses the SVG that render_svg writes (it does not take arbitrary SVG).
SvgPlot read_svg_plot(const std::string& svg);

// The texts whose box overlaps another's, as "a" / "b" pairs (empty when none).
std::vector<std::string> overlapping_texts(const SvgPlot& plot);

}  // namespace qccl::tools::test
