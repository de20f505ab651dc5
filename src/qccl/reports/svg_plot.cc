#include "qccl/reports/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>


namespace qccl::tools {
namespace {

constexpr double kPanelWidth = 460, kPanelHeight = 340;
constexpr double kLeft = 70, kRight = 20, kTop = 40, kBottom = 50;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
                                   "#000000", "#aec7e8", "#98df8a", "#ff9896", "#c5b0d5",
                                   "#c49c94"};
constexpr std::size_t kColorCount = sizeof kColors / sizeof kColors[0];

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

struct Range {
  double low = std::numeric_limits<double>::infinity();
  double high = -std::numeric_limits<double>::infinity();
  void add(double v) { low = std::min(low, v); high = std::max(high, v); }
  bool empty() const { return !(low <= high); }
};

// Round tick positions (multiples of 1, 2 or 5 × 10^k) covering [low, high]
// with about five ticks, and the range widened to whole ticks.
std::vector<double> nice_ticks(double& low, double& high) {
  const double rough = (high - low) / 5;
  const double magnitude = std::pow(10.0, std::floor(std::log10(rough)));
  double step = magnitude;
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    step = factor * magnitude;
    if (step >= rough) break;
  }
  low = std::floor(low / step) * step;
  high = std::ceil(high / step) * step;
  std::vector<double> ticks;
  for (double t = low; t <= high + step / 2; t += step) ticks.push_back(std::abs(t) < step / 1e6 ? 0.0 : t);
  return ticks;
}

void render_panel(std::ostringstream& svg, const PlotPanel& panel, double offset_x) {
  Range xs, ys;
  const auto y_of = [&](double y) { return panel.log_y ? std::log10(y) : y; };
  const auto x_of = [&](double x) { return panel.log_x ? std::log10(x) : x; };
  const auto plotted = [&](double x, double y) {
    return std::isfinite(x) && std::isfinite(y) && !(panel.log_y && !(y > 0)) &&
           !(panel.log_x && !(x > 0));
  };
  for (const auto& s : panel.series) {
    for (const auto& [x, y] : s.points) {
      if (!plotted(x, y)) continue;
      xs.add(x_of(x));
      ys.add(y_of(y));
    }
  }
  if (xs.empty()) { xs.add(0); xs.add(1); }
  if (ys.empty()) { ys.add(0); ys.add(1); }
  if (xs.high == xs.low) xs.high = xs.low + 1;
  std::vector<double> x_ticks;
  if (panel.log_x) {
    xs.low = std::floor(xs.low);
    xs.high = std::max(std::ceil(xs.high), xs.low + 1);
    for (double t = xs.low; t <= xs.high; ++t) x_ticks.push_back(t);
  } else {
    x_ticks = nice_ticks(xs.low, xs.high);
  }
  std::vector<double> y_ticks;
  if (panel.log_y) {
    ys.low = std::floor(ys.low);
    ys.high = std::max(std::ceil(ys.high), ys.low + 1);
    const int decades = static_cast<int>(ys.high - ys.low);
    const int every = std::max(1, decades / 10 + (decades % 10 != 0));
    for (int t = 0; t <= decades; t += every) y_ticks.push_back(ys.low + t);
  } else {
    if (ys.high == ys.low) ys.high = ys.low + 1;
    y_ticks = nice_ticks(ys.low, ys.high);
  }
  const double plot_w = kPanelWidth - kLeft - kRight, plot_h = kPanelHeight - kTop - kBottom;
  const auto px = [&](double x) { return offset_x + kLeft + (x - xs.low) / (xs.high - xs.low) * plot_w; };
  const auto py = [&](double y) { return kTop + plot_h - (y - ys.low) / (ys.high - ys.low) * plot_h; };

  svg << "<text x=\"" << offset_x + kLeft + plot_w / 2 << "\" y=\"22\" text-anchor=\"middle\" "
      << "font-size=\"14\">" << escape(panel.title) << "</text>\n";
  svg << "<rect x=\"" << offset_x + kLeft << "\" y=\"" << kTop << "\" width=\"" << plot_w
      << "\" height=\"" << plot_h << "\" fill=\"none\" stroke=\"#444\"/>\n";
  // Ticks: round numbers on x; on a log axis one per decade (at most 10 labelled).
  for (double x : x_ticks) {
    const std::string label = panel.log_x ? "1e" + std::to_string(static_cast<int>(x)) : number(x);
    svg << "<text x=\"" << px(x) << "\" y=\"" << kTop + plot_h + 16
        << "\" text-anchor=\"middle\" font-size=\"11\">" << label << "</text>\n";
  }
  for (double y : y_ticks) {
    const std::string label = panel.log_y ? "1e" + std::to_string(static_cast<int>(y)) : number(y);
    svg << "<line x1=\"" << px(xs.low) << "\" x2=\"" << px(xs.high) << "\" y1=\"" << py(y)
        << "\" y2=\"" << py(y) << "\" stroke=\"#ddd\"/>\n";
    svg << "<text x=\"" << offset_x + kLeft - 6 << "\" y=\"" << py(y) + 4
        << "\" text-anchor=\"end\" font-size=\"11\">" << label << "</text>\n";
  }
  svg << "<text x=\"" << offset_x + kLeft + plot_w / 2 << "\" y=\"" << kPanelHeight - 12
      << "\" text-anchor=\"middle\" font-size=\"12\">" << escape(panel.x_label) << "</text>\n";
  svg << "<text transform=\"translate(" << offset_x + 16 << "," << kTop + plot_h / 2
      << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">" << escape(panel.y_label)
      << "</text>\n";
  for (std::size_t s = 0; s < panel.series.size(); ++s) {
    svg << "<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"" << kColors[s % kColorCount] << "\" points=\"";
    for (const auto& [x, y] : panel.series[s].points) {
      if (!plotted(x, y)) continue;
      svg << px(x_of(x)) << "," << py(y_of(y)) << " ";
    }
    svg << "\"/>\n";
    if (!panel.series[s].markers) continue;
    for (const auto& [x, y] : panel.series[s].points) {
      if (!plotted(x, y)) continue;
      svg << "<circle r=\"4\" fill=\"" << kColors[s % kColorCount] << "\" cx=\"" << px(x_of(x))
          << "\" cy=\"" << py(y_of(y)) << "\"/>\n";
    }
  }
}

}  // namespace

std::string render_svg(const std::vector<PlotPanel>& panels) {
  std::ostringstream svg;
  const double width = kPanelWidth * static_cast<double>(std::max<std::size_t>(panels.size(), 1));
  // Legend entries flow left to right and wrap into rows.
  std::vector<std::pair<double, double>> legend_at;
  double lx = kLeft, ly = kPanelHeight + 8;
  if (!panels.empty()) {
    for (const auto& series : panels[0].series) {
      const double w = 30 + 7 * static_cast<double>(series.name.size());
      if (lx + w > width && lx > kLeft) {
        lx = kLeft;
        ly += 18;
      }
      legend_at.emplace_back(lx, ly);
      lx += w;
    }
  }
  const double height = ly + 22;
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  for (std::size_t p = 0; p < panels.size(); ++p) {
    render_panel(svg, panels[p], kPanelWidth * static_cast<double>(p));
  }
  for (std::size_t s = 0; s < legend_at.size(); ++s) {  // the first panel's series
    const auto [x, y] = legend_at[s];
    svg << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"14\" height=\"4\" fill=\""
        << kColors[s % kColorCount] << "\"/><text x=\"" << x + 18 << "\" y=\"" << y + 6
        << "\" font-size=\"12\">" << escape(panels[0].series[s].name) << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace qccl::tools
