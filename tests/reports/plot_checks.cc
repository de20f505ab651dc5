#include "plot_checks.h"

#include <gtest/gtest.h>

namespace qccl::tools::test {

void expect_readable(const SvgPlot& plot) {
  for (const auto& pair : overlapping_texts(plot)) ADD_FAILURE() << "texts overlap: " << pair;
  const Box canvas{0, 0, plot.width, plot.height};
  for (const auto& text : plot.texts) {
    EXPECT_TRUE(canvas.contains(text.box)) << "\"" << text.text << "\" leaves the canvas";
    for (const auto& marker : plot.markers) {
      if (marker.in_legend) continue;
      EXPECT_FALSE(text.box.overlaps(marker.box))
          << "\"" << text.text << "\" covers a marker of " << marker.series;
    }
    for (const auto& line : plot.leaders) {
      EXPECT_FALSE(segment_hits_box(line.from, line.to, text.box))
          << "a label's line runs through \"" << text.text << "\"";
    }
  }
  for (std::size_t i = 0; i < plot.leaders.size(); ++i) {
    for (std::size_t j = i + 1; j < plot.leaders.size(); ++j) {
      const auto &a = plot.leaders[i], &b = plot.leaders[j];
      EXPECT_FALSE(segments_cross(a.from, a.to, b.from, b.to)) << "two labels' lines cross";
    }
  }
}

PlotPanel scatter_panel(const std::string& title, const std::vector<LabelledPoint>& points,
                        bool log_x) {
  PlotPanel panel{title, "ms per step", "test accuracy (%)", false, log_x, {}, true};
  for (const auto& p : points) panel.series.push_back({p.label, {{p.x, p.y}}, true, {p.label}});
  return panel;
}

std::vector<LabelledPoint> hook_runs() {
  return {{"none", 804.3, 58.14},
          {"fp16", 519.6, 58.14},
          {"powersgd:1", 397.8, 58.14},
          {"powersgd:2", 381.7, 58.14},
          {"qccl:global-qsgd:bits=8", 362.7, 58.14},
          {"qccl:global-qsgd:bits=4", 287.0, 58.14},
          {"qccl:intsgd", 474.7, 58.14},
          {"qccl:terngrad:clip=2.5", 413.1, 58.14}};
}

std::vector<LabelledPoint> codec_runs() {
  return {{"fp32", 99.5, 87.51},
          {"fp16", 75.3, 87.31},
          {"global-qsgd", 57.2, 87.76},
          {"global-qsgd:bits=4", 54.8, 83.92},
          {"qsgd", 47.5, 88.23},
          {"terngrad", 36.4, 83.61},
          {"terngrad:clip=2.5", 35.0, 87.45},
          {"natural", 45.2, 88.17},
          {"intsgd", 37.4, 87.07},
          {"topk", 38.1, 83.39},
          {"randk", 52.9, 10.00},
          {"dgc", 32.6, 85.42},
          {"signsgd", 35.4, 84.11},
          {"signum", 31.7, 87.31},
          {"ef-signsgd", 29.1, 77.94},
          {"onebit", 27.3, 77.00},
          {"powersgd", 27.1, 86.01}};
}

}  // namespace qccl::tools::test
