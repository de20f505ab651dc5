// The plots read well: no text overlaps another, a marker or the canvas's
// edge, however crowded the points; each series keeps one colour and shape
// of its own; the legend lists exactly the series drawn; the axes fit the
// data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "plot_checks.h"
#include "qccl/reports/plot_style.h"
#include "qccl/reports/svg_plot.h"
#include "svg_reading.h"

namespace qccl::tools::test {
namespace {

// The number of times each label is written inside the plotting area of
// panel `panel`.
std::map<std::string, int> labels_in_plot(const SvgPlot& plot, std::size_t panel = 0) {
  std::map<std::string, int> count;
  for (const auto& text : plot.texts) {
    if (plot.plot_areas.at(panel).contains(text.box)) ++count[text.text];
  }
  return count;
}

void expect_every_label_once(const SvgPlot& plot, const std::vector<LabelledPoint>& points,
                             std::size_t panel = 0) {
  const auto count = labels_in_plot(plot, panel);
  for (const auto& p : points) {
    const auto found = count.find(p.label);
    EXPECT_TRUE(found != count.end() && found->second == 1) << "label " << p.label;
  }
}

// The values of the y ticks: the texts ending just left of a plotting area.
std::vector<double> y_ticks(const SvgPlot& plot) {
  std::vector<double> ticks;
  for (const auto& text : plot.texts) {
    if (text.anchor == "end" && !text.rotated) ticks.push_back(std::stod(text.text));
  }
  return ticks;
}

std::vector<std::string> legend_names(const SvgPlot& plot) {
  std::vector<std::string> names;
  for (const auto& text : plot.texts) {
    if (text.in_legend) names.push_back(text.text);
  }
  return names;
}

TEST(SvgPlotTest, TenLabelsWithinOnePercentOfEachOtherAllShowWithoutOverlap) {
  std::vector<LabelledPoint> points;
  for (int i = 0; i < 10; ++i) {
    points.push_back({"codec-" + std::to_string(i), 100 + 0.1 * i, 50 + 0.05 * (i % 4)});
  }
  points.push_back({"far", 200, 40});  // so that the ten are a cluster on the axes
  PlotPanel panel = scatter_panel("crowded", points);
  panel.off_scale_outliers = false;
  const auto plot = read_svg_plot(render_svg({panel}));
  expect_readable(plot);
  expect_every_label_once(plot, points);
  EXPECT_GE(plot.leaders.size(), 1u) << "some labels must have moved away from their points";
}

TEST(SvgPlotTest, LongLabelsAtTheRightEdgeStayInsideThePanel) {
  const std::vector<LabelledPoint> points = {
      {"global-qsgd:bits=8,dither=linear,norm=inf,sparse=off", 100, 86},
      {"powersgd:rank=2,warm_start=on,ef=on,min_rate=2", 99, 85.5},
      {"dgc:ratio=0.01,momentum=0.9,clip=off,warmup=0", 98.5, 86.2},
      {"fp32", 10, 84}};
  PlotPanel panel = scatter_panel("right edge", points);
  const std::string too_long(200, 'x');
  panel.series.push_back({"too long", {{99.8, 85}}, true, {too_long}});
  const auto plot = read_svg_plot(render_svg({panel}));
  expect_readable(plot);
  expect_every_label_once(plot, points);
  const auto count = labels_in_plot(plot);
  const auto shortened = std::find_if(count.begin(), count.end(), [](const auto& c) {
    return c.first.rfind("xxxx", 0) == 0 && c.first.size() > 3 &&
           c.first.substr(c.first.size() - 3) == "…";
  });
  EXPECT_NE(shortened, count.end()) << "a label wider than the panel is shortened, not left out";
}

TEST(SvgPlotTest, RecommenderPanelsOfOneAccuracyAndCloseStepTimesRead) {
  std::vector<LabelledPoint> recommender_codecs = codec_runs();
  for (auto& p : recommender_codecs) {
    p.x *= 20;
    p.y = 58.14;
  }
  const auto plot = read_svg_plot(render_svg(
      {scatter_panel("hooks", hook_runs()), scatter_panel("codecs", recommender_codecs, true)}));
  expect_readable(plot);
  expect_every_label_once(plot, hook_runs(), 0);
  expect_every_label_once(plot, recommender_codecs, 1);
}

TEST(SvgPlotTest, AFourPanelComparisonReads) {
  std::vector<PlotPanel> panels;
  for (double scale : {1.0, 0.4, 70.0, 9.0}) {
    auto points = codec_runs();
    for (auto& p : points) p.x *= scale;
    panels.push_back(scatter_panel("scaled by " + std::to_string(scale), points, true));
  }
  const auto plot = read_svg_plot(render_svg(panels));
  expect_readable(plot);
  for (std::size_t panel = 0; panel < 4; ++panel) {
    const auto count = labels_in_plot(plot, panel);
    for (const auto& p : codec_runs()) {
      const std::string label = p.label == "randk" ? "randk (off scale: 10)" : p.label;
      EXPECT_EQ(count.count(label) ? count.at(label) : 0, 1) << label << " in panel " << panel;
    }
  }
}

TEST(SvgPlotTest, EachSeriesKeepsOneStyleOfItsOwnInEveryPanelAndTheLegend) {
  const auto points = codec_runs();
  const auto plot =
      read_svg_plot(render_svg({scatter_panel("a", points), scatter_panel("b", points, true)}));
  std::map<std::string, std::pair<std::string, std::string>> style_of;
  for (const auto& marker : plot.markers) {
    if (marker.in_legend) continue;
    const auto style = std::pair{marker.colour, marker.shape};
    const auto [at, added] = style_of.emplace(marker.series, style);
    EXPECT_EQ(at->second, style) << marker.series << " changes style";
  }
  ASSERT_EQ(style_of.size(), points.size());
  std::set<std::pair<std::string, std::string>> distinct;
  for (const auto& [series, style] : style_of) distinct.insert(style);
  EXPECT_EQ(distinct.size(), points.size()) << "two series share a colour and shape";
  // The legend shows each series with its style, in order.
  std::vector<std::pair<std::string, std::string>> legend_styles;
  for (const auto& marker : plot.markers) {
    if (marker.in_legend) legend_styles.emplace_back(marker.colour, marker.shape);
  }
  const auto names = legend_names(plot);
  ASSERT_EQ(names.size(), legend_styles.size());
  for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(style_of.at(names[i]), legend_styles[i]);
}

// The issue of the old plots: fp32 and PowerSGD both blue. Up to twenty
// series, every series has a colour of its own.
TEST(SvgPlotTest, UpToTwentySeriesNeverShareAColour) {
  PlotPanel panel{"many", "ms per step", "accuracy (%)", false, false, {}};
  for (std::size_t i = 0; i < kDistinctColours; ++i) {
    panel.series.push_back({"series " + std::to_string(i),
                            {{static_cast<double>(i), static_cast<double>(i % 3)}},
                            true});
  }
  const auto plot = read_svg_plot(render_svg({panel}));
  std::map<std::string, std::string> colour_of;
  for (const auto& marker : plot.markers) {
    if (!marker.in_legend) colour_of[marker.series] = marker.colour;
  }
  ASSERT_EQ(colour_of.size(), kDistinctColours);
  std::set<std::string> colours;
  for (const auto& [series, colour] : colour_of) colours.insert(colour);
  EXPECT_EQ(colours.size(), kDistinctColours);
}

TEST(SvgPlotTest, TheLegendListsExactlyTheSeriesDrawn) {
  PlotPanel first{"first", "bytes", "time (ms)", true, true, {}};
  first.series = {{"drawn", {{1e3, 1}, {1e6, 10}}},
                  {"no points", {}},
                  {"nothing positive", {{1e3, 0}, {1e4, -1}}},
                  {"not finite", {{NAN, 1}, {1e3, INFINITY}}},
                  {"in both panels", {{1e4, 2}}, true}};
  PlotPanel second{"second", "bytes", "time (ms)", false, false, {}};
  second.series = {{"in both panels", {{3, 4}}, true}, {"second only", {{1, 2}, {2, 3}}}};
  const auto plot = read_svg_plot(render_svg({first, second}));
  EXPECT_EQ(legend_names(plot),
            (std::vector<std::string>{"drawn", "in both panels", "second only"}));
  EXPECT_EQ(plot.series,
            (std::vector<std::string>{"drawn", "in both panels", "in both panels", "second only"}));
  expect_readable(plot);
}

TEST(SvgPlotTest, AnAccuracyAxisFitsTheAccuracies) {
  const auto plot = read_svg_plot(
      render_svg({scatter_panel("close", {{"a", 10, 84.0}, {"b", 20, 85.2}, {"c", 30, 86.0}})}));
  const auto ticks = y_ticks(plot);
  ASSERT_GE(ticks.size(), 3u);
  EXPECT_GE(*std::min_element(ticks.begin(), ticks.end()), 83.0);
  EXPECT_LE(*std::max_element(ticks.begin(), ticks.end()), 87.0);
}

TEST(SvgPlotTest, ADivergedRunIsDrawnOnTheEdgeWithItsValue) {
  const auto plot = read_svg_plot(render_svg({scatter_panel("cnn", codec_runs(), true)}));
  const auto ticks = y_ticks(plot);
  EXPECT_GE(*std::min_element(ticks.begin(), ticks.end()), 70.0) << "the axis fits the others";
  EXPECT_EQ(labels_in_plot(plot).count("randk (off scale: 10)"), 1u);
  for (const auto& marker : plot.markers) {
    if (marker.series == "randk") {
      EXPECT_NEAR((marker.box.top + marker.box.bottom) / 2, plot.plot_areas[0].bottom, 1.0);
    }
  }
  expect_readable(plot);
}

TEST(SvgPlotTest, EveryPanelHasItsTitleAndAxisLabelsAndLongTextsFit) {
  const std::string long_title =
      "Gap of the ergodic average, multiplicative noise, K = 4 (Q-GenX with adaptive levels)";
  const std::string long_series = "theory: T^-1/2 absolute (Theorem 3), T^-1 relative (Theorem 4)";
  PlotPanel panel{long_title, "T (iterations)", "gap", true, true, {}};
  std::vector<std::pair<double, double>> curve, theory;
  for (int t = 1; t <= 1000; t *= 2) {
    curve.emplace_back(t, 1.0 / std::sqrt(t) * (1 + 0.1 * (t % 3)));
    theory.emplace_back(t, 1.0 / std::sqrt(t));
  }
  panel.series = {{"qgenx", curve}, {long_series, theory}};
  const auto plot = read_svg_plot(render_svg({panel}));
  std::string texts;
  for (const auto& text : plot.texts) texts += text.text + "\n";
  EXPECT_NE(texts.find("T (iterations)\n"), std::string::npos);
  EXPECT_NE(texts.find("gap\n"), std::string::npos);
  EXPECT_NE(texts.find("Gap of the ergodic average,"), std::string::npos) << "title, wrapped";
  EXPECT_NE(texts.find("levels)\n"), std::string::npos);
  EXPECT_NE(texts.find(long_series + "\n"), std::string::npos);
  expect_readable(plot);
}

TEST(SvgPlotTest, LongLinesCarryAFewMarkers) {
  PlotPanel panel{"line", "step", "loss", false, false, {}};
  std::vector<std::pair<double, double>> points;
  for (int i = 0; i < 500; ++i) points.emplace_back(i, std::exp(-i / 100.0));
  panel.series = {{"loss", points}};
  const auto plot = read_svg_plot(render_svg({panel}));
  const auto on_line = std::count_if(plot.markers.begin(), plot.markers.end(),
                                     [](const auto& m) { return !m.in_legend; });
  EXPECT_EQ(on_line, 8);
}

}  // namespace
}  // namespace qccl::tools::test
