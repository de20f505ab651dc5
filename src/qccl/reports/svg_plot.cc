#include "qccl/reports/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "qccl/reports/plot_panel.h"
#include "qccl/reports/plot_text.h"

namespace qccl::tools {
namespace {

constexpr double kCellWidth = 480, kPlotHeight = 280;
constexpr double kRight = 24;      // right of the plotting area, in a cell
constexpr double kBelowPlot = 52;  // below it: the x ticks and the x label
constexpr double kLegendRow = 20, kLegendSwatch = 24, kLegendGap = 18, kMargin = 16;
constexpr double kWidestLegend = 2 * kCellWidth - 2 * kMargin;  // an entry, its swatch included

bool shown(const PlotPanel& panel, double x, double y) {
  return Axis{panel.log_x}.shows(x) && Axis{panel.log_y}.shows(y);
}

struct LegendEntry {
  std::string name;
  std::string text;   // the name, shortened to fit kWidestLegend
  bool line = false;  // drawn as a line (more than one point) in some panel
  double x = 0, baseline = 0;
};

// The series with a point to show, by name in order of first appearance:
// each its style, and its legend entry.
void collect_series(const std::vector<PlotPanel>& panels, SeriesStyles& styles,
                    std::vector<LegendEntry>& legend) {
  for (const auto& panel : panels) {
    for (const auto& s : panel.series) {
      const auto count = std::count_if(s.points.begin(), s.points.end(), [&](const auto& p) {
        return shown(panel, p.first, p.second);
      });
      if (count == 0) continue;
      auto entry = std::find_if(legend.begin(), legend.end(),
                                [&](const auto& e) { return e.name == s.name; });
      if (entry == legend.end()) {
        styles.emplace(s.name, series_style(legend.size()));
        const std::string text =
            shortened_to_fit(s.name, kWidestLegend - kLegendSwatch - 6, kLegendSize);
        entry = legend.insert(legend.end(), LegendEntry{s.name, text});
      }
      entry->line = entry->line || count > 1;
    }
  }
}

double legend_entry_width(const LegendEntry& entry) {
  return kLegendSwatch + 6 + text_width(entry.text, kLegendSize);
}

// Entries flow left to right from `top`, wrapping into rows within
// `width`; returns the bottom of the last row.
double lay_out_legend(std::vector<LegendEntry>& legend, double top, double width) {
  double x = kMargin, baseline = top + 14;
  for (auto& entry : legend) {
    const double w = legend_entry_width(entry);
    if (x + w > width - kMargin && x > kMargin) {
      x = kMargin;
      baseline += kLegendRow;
    }
    entry.x = x;
    entry.baseline = baseline;
    x += w + kLegendGap;
  }
  return legend.empty() ? top : baseline + 6;
}

void draw_legend(std::ostream& svg, const std::vector<LegendEntry>& legend,
                 const SeriesStyles& styles) {
  for (const auto& entry : legend) {
    const SeriesStyle& style = styles.at(entry.name);
    const double mid = entry.baseline - 4;
    svg << "<g class=\"legend-entry\">";
    if (entry.line) {
      svg << "<line x1=\"" << entry.x << "\" x2=\"" << entry.x + kLegendSwatch << "\" y1=\"" << mid
          << "\" y2=\"" << mid << "\" stroke-width=\"1.5\" stroke=\"" << style.colour << "\"/>";
    }
    svg << marker_svg(style.marker, {entry.x + kLegendSwatch / 2, mid}, kMarkerRadius, style.colour)
        << text_element(entry.text, entry.x + kLegendSwatch + 6, entry.baseline, kLegendSize,
                        Anchor::start)
        << "</g>\n";
  }
}

}  // namespace

// The canvas: panels in cells of kCellWidth, two to a row, every cell the
// same: title lines as many as the longest title needs, a plotting area
// kPlotHeight high whose left edge leaves room for the widest y tick
// label of any panel, and the x ticks and label below it. The legend
// follows under the last row; a legend entry wider than the cells widens
// the canvas.
std::string render_svg(const std::vector<PlotPanel>& panels) {
  SeriesStyles styles;
  std::vector<LegendEntry> legend;
  collect_series(panels, styles, legend);
  std::vector<Axis> ys, xs;
  double widest = 0;
  for (const auto& panel : panels) {
    ys.push_back(panel_y_axis(panel, kPlotHeight));
    widest = std::max(widest, widest_tick(ys.back()));
  }
  const double left = 8 + 1.05 * kAxisLabelSize + 8 + widest + 6;
  const double plot_width = kCellWidth - left - kRight;
  // Titles are centred on the plotting area, which sits right of the cell's middle.
  const double title_width = 2 * (kCellWidth - kMargin / 2 - (left + plot_width / 2));
  std::vector<std::vector<std::string>> titles;
  std::size_t title_lines = 1;
  for (const auto& panel : panels) {
    xs.push_back(panel_x_axis(panel, plot_width));
    titles.push_back(wrap_text(panel.title, title_width, kTitleSize));
    title_lines = std::max(title_lines, titles.back().size());
  }
  const double above = 17 * static_cast<double>(title_lines) + 17;
  const double cell_height = above + kPlotHeight + kBelowPlot;
  const std::size_t columns = std::clamp<std::size_t>(panels.size(), 1, 2);
  const std::size_t rows = (panels.size() + columns - 1) / columns;
  double width = kCellWidth * static_cast<double>(columns);
  for (const auto& entry : legend) width = std::max(width, legend_entry_width(entry) + 2 * kMargin);
  width = std::ceil(width);  // whole pixels, as rasterisers size their images
  const double height =
      std::ceil(lay_out_legend(legend, cell_height * static_cast<double>(rows), width) + 8);

  std::ostringstream svg;
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  for (std::size_t p = 0; p < panels.size(); ++p) {
    PanelFrame frame;
    frame.left = kCellWidth * static_cast<double>(p % columns);
    frame.top = cell_height * static_cast<double>(p / columns);
    frame.plot = {frame.left + left, frame.top + above, frame.left + kCellWidth - kRight,
                  frame.top + above + kPlotHeight};
    frame.title = titles[p];
    draw_panel(svg, panels[p], frame, xs[p], ys[p], styles);
  }
  draw_legend(svg, legend, styles);
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace qccl::tools
