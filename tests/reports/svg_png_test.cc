// Every kind of plot the project draws, rasterised to PNG by a real SVG
// renderer (rsvg-convert, from Debian's librsvg2-bin): it renders at the
// size the SVG declares, with something drawn and nothing outside it; and
// the text widths the layout assumes are never narrower than the text as
// rendered. Skipped, saying why, where rsvg-convert is not installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "plot_checks.h"
#include "png_reading.h"
#include "qccl/reports/plot_text.h"
#include "qccl/reports/svg_plot.h"
#include "svg_reading.h"

namespace qccl::tools::test {
namespace {

namespace fs = std::filesystem;

class SvgPngTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v rsvg-convert > /dev/null 2>&1") != 0) {
      GTEST_SKIP() << "rsvg-convert is not installed (Debian's librsvg2-bin; scripts/install-deps)";
    }
    dir_ = fs::temp_directory_path() /
           ("qccl-svg-png-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // The SVG rasterised; fails the test if rsvg-convert does.
  RgbaImage rasterise(const std::string& svg, const std::string& name) {
    const fs::path in = dir_ / (name + ".svg"), out = dir_ / (name + ".png");
    std::ofstream(in) << svg;
    const std::string command = "rsvg-convert --format=png --output='" + out.string() + "' '" +
                                in.string() + "' 2> '" + (dir_ / "errors").string() + "'";
    const int status = std::system(command.c_str());
    std::ifstream errors(dir_ / "errors");
    std::stringstream message;
    message << errors.rdbuf();
    EXPECT_EQ(status, 0) << name << ": " << message.str();
    return status == 0 ? read_png(out.string()) : RgbaImage{};
  }

  // Renders at the declared size, draws something, and is not mostly ink.
  void expect_rendered(const std::vector<PlotPanel>& panels, const std::string& name) {
    expect_rendered(render_svg(panels), name);
  }

  // Likewise for a plot already drawn (the SVGs the docs show).
  void expect_rendered(const std::string& svg, const std::string& name) {
    const SvgPlot plot = read_svg_plot(svg);
    expect_readable(plot);
    const RgbaImage image = rasterise(svg, name);
    EXPECT_EQ(image.width, static_cast<std::size_t>(plot.width)) << name;
    EXPECT_EQ(image.height, static_cast<std::size_t>(plot.height)) << name;
    std::size_t inked = 0;
    for (std::size_t y = 0; y < image.height; ++y) {
      for (std::size_t x = 0; x < image.width; ++x) inked += image.inked(x, y);
    }
    const double share =
        static_cast<double>(inked) / static_cast<double>(image.width * image.height);
    EXPECT_GT(share, 0.01) << name << " is blank";
    EXPECT_LT(share, 0.5) << name << " is mostly ink";
  }

  fs::path dir_;
};

// The plots the docs show, as committed: readable (no text over text, a
// marker or the edge) and rendered.
TEST_F(SvgPngTest, TheDocsPlotsAsCommittedReadAndRender) {
  for (const char* name : {"baselines-comparison.svg", "pytorch-hooks-comparison.svg"}) {
    std::ifstream in(fs::path(QCCL_DOCS_DIR) / name);
    ASSERT_TRUE(in) << name;
    std::stringstream svg;
    svg << in.rdbuf();
    SCOPED_TRACE(name);
    expect_rendered(svg.str(), name);
  }
}

std::vector<std::pair<double, double>> curve(double scale, double slope, int points) {
  std::vector<std::pair<double, double>> out;
  for (int i = 0; i < points; ++i) {
    const double x = std::pow(10.0, 3 + 6.0 * i / (points - 1));
    out.emplace_back(x, scale * std::pow(x, slope));
  }
  return out;
}

TEST_F(SvgPngTest, TheCodecComparisonRenders) {
  std::vector<PlotPanel> panels;
  for (double scale : {1.0, 0.35, 70.0, 9.0}) {
    auto points = codec_runs();
    for (auto& p : points) p.x *= scale;
    panels.push_back(scatter_panel("cnn, scaled by " + number_text(scale), points, true));
  }
  expect_rendered(panels, "comparison");
}

TEST_F(SvgPngTest, TheHookComparisonRenders) {
  expect_rendered({scatter_panel("recommender, 4 hosts at 1gbit", hook_runs())}, "hooks");
}

TEST_F(SvgPngTest, TheSuitesTimeAndSpeedUpPlotsRender) {
  PlotPanel time{"4 hosts, 1 Gbit/s", "fp32 bytes S", "median time (ms)", true, true, {}};
  PlotPanel speedup{
      "4 hosts, 64 MiB", "link rate (bit/s)", "speed-up over MPI fp32", false, true, {}};
  const char* names[] = {"MPI fp32",
                         "ring fp32",
                         "ring fp16",
                         "ring global-qsgd:bits=8",
                         "halving-doubling global-qsgd:bits=4",
                         "ring topk:ratio=0.01"};
  for (int s = 0; s < 6; ++s) {
    time.series.push_back({names[s], curve(1e-3 * (s + 1), 0.8 + 0.02 * s, 13)});
    speedup.series.push_back({names[s], {{1e8, 1 + 0.3 * s}, {1e9, 1 + 0.1 * s}, {1e10, 1}}});
  }
  expect_rendered({time}, "time");
  expect_rendered({speedup}, "speedup");
}

TEST_F(SvgPngTest, TheExperimentsCurvesRender) {
  std::vector<PlotPanel> panels;
  for (const std::string noise : {"absolute", "relative"}) {
    PlotPanel panel{"Gap of the ergodic average, " + noise + " noise, K = 4 (Q-GenX)",
                    "T (iterations)",
                    "gap",
                    true,
                    true,
                    {}};
    for (int c = 0; c < 4; ++c)
      panel.series.push_back({"codec " + std::to_string(c), curve(1 + c, -0.5, 200)});
    panel.series.push_back(
        {"theory: T^-1/2 absolute (Theorem 3), T^-1 relative (Theorem 4)", curve(1, -0.5, 2)});
    panels.push_back(panel);
  }
  expect_rendered(panels, "curves");
}

TEST_F(SvgPngTest, TheShardedVariantsRender) {
  PlotPanel perplexity{"final test perplexity, 4 ranks, 200 steps",
                       "variant (its number in the legend)",
                       "perplexity",
                       false,
                       false,
                       {}};
  PlotPanel step{"time per step, 4 ranks, 200 steps",
                 "variant (its number in the legend)",
                 "ms per step",
                 false,
                 false,
                 {}};
  const char* variants[] = {"baseline", "W8G8", "W4G8", "W8G4 learned levels", "W4G4"};
  for (int i = 0; i < 5; ++i) {
    const std::string name = std::to_string(i + 1) + " " + variants[i];
    perplexity.series.push_back({name, {{i + 1.0, 12.5 + 0.3 * i}}, true});
    step.series.push_back({name, {{i + 1.0, 480 - 40.0 * i}}, true});
  }
  expect_rendered({perplexity, step}, "qsdp");
}

// Each string is drawn alone on its row; its ink must lie inside the box
// text_box() gives it (1 pixel of anti-aliasing aside), so that boxes that
// do not overlap mean texts that do not touch.
TEST_F(SvgPngTest, RenderedTextStaysInsideItsEstimatedBox) {
  const std::vector<std::string> samples = {"mmmmmmmmmm",
                                            "WWWWWWWW",
                                            "MMMMMMMM",
                                            "%%%%====@@@@",
                                            "global-qsgd:bits=8",
                                            "qccl:terngrad:clip=2.5",
                                            "randk (off scale: 10)",
                                            "1234567890",
                                            "Ågjpqy|()[]{}",
                                            "×÷±→↓µσπ"};
  std::ostringstream svg;
  const double row = 40;
  const double height = row * static_cast<double>(samples.size() * 3) + 20;
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
      << "width=\"600\" height=\"" << height << "\" font-family=\"sans-serif\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  std::vector<Box> boxes;
  for (double size : {11.0, 12.0, 14.0}) {
    for (const auto& text : samples) {
      const double baseline = row * static_cast<double>(boxes.size()) + 30;
      svg << text_element(text, 10, baseline, size, Anchor::start) << "\n";
      boxes.push_back(text_box(text, 10, baseline, size, Anchor::start));
    }
  }
  svg << "</svg>\n";
  const RgbaImage image = rasterise(svg.str(), "text");
  ASSERT_EQ(image.height, static_cast<std::size_t>(height));
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    const Box allowed = boxes[i].grown(1);
    bool any = false;
    for (std::size_t y = static_cast<std::size_t>(row * i + 5);
         y < row * (i + 1) + 5 && y < image.height; ++y) {
      for (std::size_t x = 0; x < image.width; ++x) {
        if (!image.inked(x, y)) continue;
        any = true;
        EXPECT_TRUE(x + 1 > allowed.left && x < allowed.right && y + 1 > allowed.top &&
                    y < allowed.bottom)
            << "\"" << samples[i % samples.size()] << "\" is inked at (" << x << ", " << y
            << "), outside " << allowed.left << ".." << allowed.right << " × " << allowed.top
            << ".." << allowed.bottom;
        if (HasFailure()) return;
      }
    }
    EXPECT_TRUE(any) << "\"" << samples[i % samples.size()] << "\" was not drawn (no font?)";
  }
}

}  // namespace
}  // namespace qccl::tools::test
