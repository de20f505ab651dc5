// How the series of a plot are told apart: each its own colour and marker
// shape, the same in every panel and in the legend.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "qccl/reports/plot_geometry.h"

namespace qccl::tools {

enum class Marker { circle, square, triangle_up, diamond, triangle_down, plus, star };

struct SeriesStyle {
  std::string_view colour;  // "#rrggbb"
  Marker marker = Marker::circle;
};

// Twenty colours and seven shapes, paired so that the first
// kDistinctColours series all differ in colour (and neighbours in shape
// too), and the first kDistinctStyles in colour or shape.
inline constexpr std::size_t kDistinctColours = 20;
inline constexpr std::size_t kDistinctStyles = 140;
SeriesStyle series_style(std::size_t index);

// The marker's name, as its SVG element's class ("marker diamond").
std::string_view marker_name(Marker marker);

// Half the side of the square a marker of `radius` stays within (its
// white outline included).
inline double marker_extent(double radius) { return 1.25 * radius + 0.5; }
inline Box marker_box(Point at, double radius) {
  const double e = marker_extent(radius);
  return {at.x - e, at.y - e, at.x + e, at.y + e};
}

// One SVG element drawing the marker centred on `at`.
std::string marker_svg(Marker marker, Point at, double radius, std::string_view colour);

}  // namespace qccl::tools
