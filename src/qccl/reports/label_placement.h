// Labels beside the points of a plot, placed so that none covers another
// label, a marker or other text, or leaves the plot; a label with no room
// beside its point goes to the nearest free spot, joined to it by a line.
#pragma once

#include <string>
#include <vector>

#include "qccl/reports/plot_geometry.h"

namespace qccl::tools {

struct LabelRequest {
  Point at;              // the point labelled
  double clearance = 0;  // how far from `at` its marker reaches
  std::string text;
};

struct PlacedLabel {
  bool placed = false;  // false: no free spot anywhere in the area
  std::string text;     // the request's, or its start and "…" if that found no room
  Point baseline;       // where the text starts, on its baseline
  Box box;              // what the text covers
  bool leader = false;  // whether a line joins the label to its point
  Point leader_from, leader_to;
};

// One PlacedLabel per request, in the same order. `area` bounds every
// label; `obstacles` (the markers, any text already there) are kept clear
// of labels and of their lines. A label with no room whole is shortened
// to 3/4 of the area's width, if that is shorter.
std::vector<PlacedLabel> place_labels(const std::vector<LabelRequest>& requests, const Box& area,
                                      const std::vector<Box>& obstacles, double font_size);

}  // namespace qccl::tools
