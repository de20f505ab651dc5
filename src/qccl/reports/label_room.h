// The room left for labels in a plot panel: what labels, their lines and
// the markers already take, and the tests a new label and its line must
// pass there (label_placement.cc searches with them).
#pragma once

#include <utility>
#include <vector>

#include "qccl/reports/plot_geometry.h"

namespace qccl::tools {

struct LabelRoom {
  const Box& area;                    // every label stays inside
  const std::vector<Box>& obstacles;  // markers and other text, kept clear
  std::vector<Box> labels;            // placed so far
  std::vector<std::pair<Point, Point>> leaders;
  std::vector<Point> waiting;  // the points whose labels are still to be placed

  // Inside the area and clear of obstacles, labels and lines.
  bool box_free(const Box& box) const;

  // Whether a label at `box` beside the point `at`, with no line to it,
  // would be as near another point's marker: it would read as that one's.
  bool near_other_marker(const Box& box, Point at) const;

  // Whether a line from `from` (on the edge of the marker at `at`) to `to`
  // crosses no obstacle, label or other line; markers drawn over `at`
  // itself cannot be avoided and are not checked.
  bool line_free(Point at, Point from, Point to) const;

  // Whether a label at `box`, with a line from `from` to `to` (no line if
  // they are equal), would leave some waiting point with labels or lines
  // in the way both straight above and straight below it, when it had a
  // way out before: lines up or down are its last resort in a crowd.
  bool shuts_in(const Box& box, Point from, Point to) const;
};

}  // namespace qccl::tools
