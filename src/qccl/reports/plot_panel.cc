#include "qccl/reports/plot_panel.h"

#include <algorithm>
#include <sstream>

#include "qccl/reports/label_placement.h"
#include "qccl/reports/plot_text.h"

namespace qccl::tools {
namespace {

constexpr std::size_t kLineMarkers = 8;  // markers along a line drawn without one per point

// Pixel positions of data values in the plotting area.
struct Mapping {
  const Box& plot;
  const Axis &x, &y;
  double px(double v) const { return plot.left + x.fraction(v) * plot.width(); }
  double py(double v) const { return plot.bottom - y.fraction(v) * plot.height(); }
  // A y off the axis's scale is drawn on the edge it is beyond.
  double py_clamped(double v) const { return std::clamp(py(v), plot.top, plot.bottom); }
  bool off_scale(double v) const { return y.scaled(v) < y.low || y.scaled(v) > y.high; }
  bool shows(double vx, double vy) const { return x.shows(vx) && y.shows(vy); }
};

std::vector<double> values(const PlotPanel& panel, bool of_x) {
  std::vector<double> out;
  for (const auto& s : panel.series) {
    for (const auto& [x, y] : s.points) out.push_back(of_x ? x : y);
  }
  return out;
}

void draw_axes(std::ostream& svg, const PlotPanel& panel, const PanelFrame& frame,
               const Mapping& m) {
  const Box& plot = frame.plot;
  for (std::size_t i = 0; i < frame.title.size(); ++i) {
    svg << text_element(frame.title[i], (plot.left + plot.right) / 2,
                        frame.top + 20 + 17 * static_cast<double>(i), kTitleSize, Anchor::middle)
        << "\n";
  }
  for (const auto& tick : m.y.ticks) {
    const double at = plot.bottom - (tick.at - m.y.low) / (m.y.high - m.y.low) * plot.height();
    svg << "<line x1=\"" << plot.left << "\" x2=\"" << plot.right << "\" y1=\"" << at << "\" y2=\""
        << at << "\" stroke=\"#e4e4e4\"/>\n"
        << text_element(tick.text, plot.left - 6, at + 4, kTickSize, Anchor::end) << "\n";
  }
  for (const auto& tick : m.x.ticks) {
    const double at = plot.left + (tick.at - m.x.low) / (m.x.high - m.x.low) * plot.width();
    svg << "<line x1=\"" << at << "\" x2=\"" << at << "\" y1=\"" << plot.top << "\" y2=\""
        << plot.bottom << "\" stroke=\"#f0f0f0\"/>\n"
        << text_element(tick.text, at, plot.bottom + 17, kTickSize, Anchor::middle) << "\n";
  }
  svg << "<rect x=\"" << plot.left << "\" y=\"" << plot.top << "\" width=\"" << plot.width()
      << "\" height=\"" << plot.height() << "\" fill=\"none\" stroke=\"#444\"/>\n";
  svg << text_element(panel.x_label, (plot.left + plot.right) / 2, plot.bottom + 38, kAxisLabelSize,
                      Anchor::middle)
      << "\n";
  const double label_x = frame.left + 8 + 0.8 * kAxisLabelSize,
               label_y = (plot.top + plot.bottom) / 2;
  std::ostringstream rotate;
  rotate << "transform=\"rotate(-90 " << label_x << " " << label_y << ")\"";
  svg << text_element(panel.y_label, label_x, label_y, kAxisLabelSize, Anchor::middle, rotate.str())
      << "\n";
}

// The indices of the points that get a marker.
std::vector<std::size_t> marked(const std::vector<std::size_t>& shown, bool every_point) {
  if (every_point || shown.size() <= kLineMarkers) return shown;
  std::vector<std::size_t> some;
  for (std::size_t k = 0; k < kLineMarkers; ++k) {
    some.push_back(shown[k * (shown.size() - 1) / (kLineMarkers - 1)]);
  }
  return some;
}

// What a point's label says: its own text, and for a point off the
// scale its value (with the series' name if it has no text).
std::string label_text(const PlotSeries& s, std::size_t i, bool off_scale) {
  const std::string own = i < s.labels.size() ? s.labels[i] : "";
  if (!off_scale) return own;
  return (own.empty() ? s.name : own) + " (off scale: " + number_text(s.points[i].second) + ")";
}

// What the series of a panel leave for its labels: the markers to keep
// clear of, and the labels wanted, each with its series' colour.
struct Marks {
  std::vector<Box> markers;
  std::vector<LabelRequest> labels;
  std::vector<std::string_view> colours;
};

// Draws one series (a group titled with its name) and adds its marks.
void draw_series(std::ostream& svg, const PlotSeries& s, const SeriesStyle& style, const Mapping& m,
                 Marks& marks) {
  std::vector<std::size_t> shown;
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    if (m.shows(s.points[i].first, s.points[i].second)) shown.push_back(i);
  }
  if (shown.empty()) return;
  svg << "<g><title>" << escape_xml(s.name) << "</title>\n";
  if (shown.size() > 1) {
    svg << "<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"" << style.colour
        << "\" points=\"";
    for (std::size_t i : shown) {
      svg << m.px(s.points[i].first) << "," << m.py_clamped(s.points[i].second) << " ";
    }
    svg << "\"/>\n";
  }
  for (std::size_t i : marked(shown, s.markers)) {
    const Point at{m.px(s.points[i].first), m.py_clamped(s.points[i].second)};
    svg << marker_svg(style.marker, at, kMarkerRadius, style.colour) << "\n";
    marks.markers.push_back(marker_box(at, kMarkerRadius));
  }
  svg << "</g>\n";
  for (std::size_t i : shown) {
    const std::string text = label_text(s, i, m.off_scale(s.points[i].second));
    if (text.empty()) continue;
    marks.labels.push_back({{m.px(s.points[i].first), m.py_clamped(s.points[i].second)},
                            marker_extent(kMarkerRadius),
                            text});
    marks.colours.push_back(style.colour);
  }
}

// Each label's line (in its series' colour) and text.
void draw_labels(std::ostream& svg, const Marks& marks, const Box& plot) {
  const auto placed = place_labels(marks.labels, plot.grown(-1), marks.markers, kPointLabelSize);
  for (std::size_t i = 0; i < placed.size(); ++i) {
    const auto& label = placed[i];
    if (!label.placed) continue;
    if (label.leader) {
      svg << "<line class=\"leader\" x1=\"" << label.leader_from.x << "\" y1=\""
          << label.leader_from.y << "\" x2=\"" << label.leader_to.x << "\" y2=\""
          << label.leader_to.y << "\" stroke=\"" << marks.colours[i]
          << "\" stroke-width=\"0.8\"/>\n";
    }
    svg << text_element(label.text, label.baseline.x, label.baseline.y, kPointLabelSize,
                        Anchor::start, "fill=\"#222\"")
        << "\n";
  }
}

}  // namespace

Axis panel_x_axis(const PlotPanel& panel, double length) {
  return fit_axis(values(panel, true), {panel.log_x, length, true, kTickSize, false});
}

Axis panel_y_axis(const PlotPanel& panel, double length) {
  return fit_axis(values(panel, false),
                  {panel.log_y, length, false, kTickSize, panel.off_scale_outliers});
}

double widest_tick(const Axis& axis) {
  double widest = 0;
  for (const auto& tick : axis.ticks) widest = std::max(widest, text_width(tick.text, kTickSize));
  return widest;
}

void draw_panel(std::ostream& svg, const PlotPanel& panel, const PanelFrame& frame, const Axis& x,
                const Axis& y, const SeriesStyles& styles) {
  const Mapping m{frame.plot, x, y};
  draw_axes(svg, panel, frame, m);
  Marks marks;
  for (const auto& s : panel.series) {
    const auto style = styles.find(s.name);  // a series with no point to show has none
    if (style != styles.end()) draw_series(svg, s, style->second, m, marks);
  }
  draw_labels(svg, marks, frame.plot);
}

}  // namespace qccl::tools
