#include "qccl/reports/plot_style.h"

#include <cmath>
#include <numbers>
#include <sstream>
#include <utility>
#include <vector>

namespace qccl::tools {
namespace {

// Tableau 10 (matplotlib's default cycle), then ten darker or purer hues
// that stay apart from them: twenty colours readable on white, so that a
// plot of up to twenty series never repeats a colour.
constexpr std::string_view kColours[] = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
    "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39",
    "#7b4173", "#000000", "#00a087", "#ff00ff", "#4d4d00", "#0000ff"};
constexpr Marker kMarkers[] = {Marker::circle,  Marker::square,        Marker::triangle_up,
                               Marker::diamond, Marker::triangle_down, Marker::plus,
                               Marker::star};
constexpr std::size_t kColourCount = std::size(kColours), kMarkerCount = std::size(kMarkers);
static_assert(kColourCount == kDistinctColours && kColourCount * kMarkerCount == kDistinctStyles);

// The outline of each shape but the circle, in units of the radius, inside
// ±marker_extent(1) on both axes.
std::vector<std::pair<double, double>> outline(Marker marker) {
  switch (marker) {
    case Marker::square:
      return {{-0.9, -0.9}, {0.9, -0.9}, {0.9, 0.9}, {-0.9, 0.9}};
    case Marker::triangle_up:
      return {{0, -1.2}, {1.15, 0.8}, {-1.15, 0.8}};
    case Marker::triangle_down:
      return {{0, 1.2}, {1.15, -0.8}, {-1.15, -0.8}};
    case Marker::diamond:
      return {{0, -1.25}, {1.0, 0}, {0, 1.25}, {-1.0, 0}};
    case Marker::plus: {
      constexpr double a = 1.2, w = 0.4;
      return {{-w, -a}, {w, -a}, {w, -w}, {a, -w}, {a, w},   {w, w},
              {w, a},   {-w, a}, {-w, w}, {-a, w}, {-a, -w}, {-w, -w}};
    }
    case Marker::star: {
      std::vector<std::pair<double, double>> points;
      for (int i = 0; i < 10; ++i) {
        const double r = i % 2 == 0 ? 1.25 : 0.55, angle = std::numbers::pi * (i / 5.0 - 0.5);
        points.emplace_back(r * std::cos(angle), r * std::sin(angle));
      }
      return points;
    }
    case Marker::circle:
      break;
  }
  return {};
}

}  // namespace

SeriesStyle series_style(std::size_t index) {
  // Colour and shape advance together; as 10 and 7 are coprime, the pair
  // repeats only after 70 series.
  return {kColours[index % kColourCount], kMarkers[index % kMarkerCount]};
}

std::string_view marker_name(Marker marker) {
  switch (marker) {
    case Marker::circle:
      return "circle";
    case Marker::square:
      return "square";
    case Marker::triangle_up:
      return "triangle-up";
    case Marker::diamond:
      return "diamond";
    case Marker::triangle_down:
      return "triangle-down";
    case Marker::plus:
      return "plus";
    case Marker::star:
      return "star";
  }
  return "circle";
}

std::string marker_svg(Marker marker, Point at, double radius, std::string_view colour) {
  std::ostringstream svg;
  svg << "<";
  if (marker == Marker::circle) {
    svg << "circle cx=\"" << at.x << "\" cy=\"" << at.y << "\" r=\"" << radius << "\"";
  } else {
    svg << "polygon points=\"";
    for (const auto& [x, y] : outline(marker))
      svg << at.x + x * radius << "," << at.y + y * radius << " ";
    svg << "\"";
  }
  svg << " class=\"marker " << marker_name(marker) << "\" fill=\"" << colour
      << "\" stroke=\"white\" stroke-width=\"0.6\"/>";
  return svg.str();
}

}  // namespace qccl::tools
