// Axes fit the data with a little room, carry round, distinct ticks whose
// labels do not collide, and set apart only values far from all others.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "qccl/reports/plot_axis.h"
#include "qccl/reports/plot_text.h"

namespace qccl::tools {
namespace {

AxisRequest linear(double length = 300) { return {false, length, true, 11, false}; }
AxisRequest logarithmic(double length = 300) { return {true, length, true, 11, false}; }

// The ticks lie on the axis, in order, and no two read alike.
void expect_sound_ticks(const Axis& axis) {
  std::set<std::string> texts;
  for (std::size_t i = 0; i < axis.ticks.size(); ++i) {
    EXPECT_GE(axis.ticks[i].at, axis.low - 1e-9);
    EXPECT_LE(axis.ticks[i].at, axis.high + 1e-9);
    if (i > 0) {
      EXPECT_GT(axis.ticks[i].at, axis.ticks[i - 1].at);
    }
    EXPECT_TRUE(texts.insert(axis.ticks[i].text).second) << "two ticks read " << axis.ticks[i].text;
  }
}

TEST(PlotAxisTest, AccuraciesAFewPointsApartGetAnAxisOfAFewPoints) {
  const Axis axis = fit_axis({84.0, 85.1, 86.0}, linear());
  EXPECT_LE(axis.low, 84.0);
  EXPECT_GE(axis.high, 86.0);
  EXPECT_GT(axis.low, 83.5) << "no more than 5% spare";
  EXPECT_LT(axis.high, 86.5);
  ASSERT_GE(axis.ticks.size(), 3u);
  expect_sound_ticks(axis);
  EXPECT_EQ(axis.ticks.front().text, "84.0");
}

TEST(PlotAxisTest, TicksAreRoundStepsOfOneTwoOrFive) {
  for (const auto& [low, high] :
       {std::pair{0.0, 1.0}, {183.0, 917.0}, {-3.2, 7.9}, {1e-7, 3e-7}, {12345.0, 12399.0}}) {
    const Axis axis = fit_axis({low, high}, linear());
    ASSERT_GE(axis.ticks.size(), 3u) << low << ".." << high;
    const double step = axis.ticks[1].at - axis.ticks[0].at;
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    EXPECT_TRUE(std::abs(mantissa - 1) < 1e-6 || std::abs(mantissa - 2) < 1e-6 ||
                std::abs(mantissa - 5) < 1e-6)
        << step;
    expect_sound_ticks(axis);
  }
}

TEST(PlotAxisTest, OneValueGetsARangeAroundIt) {
  const Axis axis = fit_axis({58.14, 58.14}, linear());
  EXPECT_LT(axis.low, 58.14);
  EXPECT_GT(axis.high, 58.14);
  EXPECT_GT(axis.low, 50.0);
  EXPECT_GE(axis.ticks.size(), 3u);
}

TEST(PlotAxisTest, PositiveDataDoNotGetNegativeTicks) {
  const Axis axis = fit_axis({0.0, 0.5, 10.0}, linear());
  EXPECT_EQ(axis.low, 0.0);
  expect_sound_ticks(axis);
}

TEST(PlotAxisTest, ALogAxisOverLessThanADecadeStillHasSeveralTicks) {
  const Axis axis = fit_axis({27.1, 99.5}, logarithmic(370));
  EXPECT_GE(axis.ticks.size(), 3u);
  EXPECT_NEAR(axis.low, std::log10(27.1), 0.05);
  EXPECT_NEAR(axis.high, std::log10(99.5), 0.05);
  expect_sound_ticks(axis);
  const Axis narrow = fit_axis({26.0, 35.7}, logarithmic(370));
  EXPECT_GE(narrow.ticks.size(), 3u);
  expect_sound_ticks(narrow);
}

TEST(PlotAxisTest, AWideLogAxisLabelsAtMostEightPowers) {
  const Axis axis = fit_axis({1e-9, 1e9}, logarithmic(250));
  EXPECT_GE(axis.ticks.size(), 3u);
  EXPECT_LE(axis.ticks.size(), 9u);
  expect_sound_ticks(axis);
  for (const auto& tick : axis.ticks) EXPECT_EQ(tick.at, std::round(tick.at)) << tick.text;
  for (const auto& tick : axis.ticks) {
    EXPECT_EQ(tick.text, "1e" + std::to_string(static_cast<int>(tick.at))) << "all in one notation";
  }
  const Axis small = fit_axis({2.0, 800.0}, logarithmic(370));
  for (const auto& tick : small.ticks)
    EXPECT_EQ(tick.text.find('e'), std::string::npos) << tick.text;
}

TEST(PlotAxisTest, TickLabelsDoNotCollideOnAShortAxis) {
  const Axis axis = fit_axis({1234567.0, 9876543.0}, linear(120));
  for (std::size_t i = 1; i < axis.ticks.size(); ++i) {
    const double apart = (axis.ticks[i].at - axis.ticks[i - 1].at) / (axis.high - axis.low) * 120;
    EXPECT_GE(apart,
              (text_width(axis.ticks[i].text, 11) + text_width(axis.ticks[i - 1].text, 11)) / 2);
  }
}

TEST(PlotAxisTest, OnlyValuesFarFromAllOthersAreSetApart) {
  // The CNN's codecs: Rand-k diverged at 10%, the others lie within 77-88%.
  const std::vector<double> cnn = {10.0,  77.0,  77.94, 83.39, 83.61, 83.92, 84.11, 85.42, 86.01,
                                   87.07, 87.31, 87.31, 87.45, 87.51, 87.76, 88.17, 88.23};
  EXPECT_EQ(majority_range(cnn), (std::pair{77.0, 88.23}));
  // PowerSGD rank 1's 76.72% is a real drop, not a divergence: it stays.
  const std::vector<double> hooks = {76.72, 81.92, 84.07, 84.43, 84.91, 84.92, 85.13, 86.29};
  EXPECT_EQ(majority_range(hooks), (std::pair{76.72, 86.29}));
  // Outliers on both sides, and at most a quarter of the values.
  EXPECT_EQ(majority_range({-50, 1, 2, 3, 4, 5, 6, 900}), (std::pair{1.0, 6.0}));
  EXPECT_EQ(majority_range({1, 2, 900, 901}), (std::pair{1.0, 901.0}));
  EXPECT_EQ(majority_range({10, 58.14, 58.14, 58.14}), (std::pair{58.14, 58.14}));

  const Axis axis = fit_axis(cnn, {false, 280, false, 11, true});
  EXPECT_GT(axis.low, 70.0);
  EXPECT_LE(axis.low, 77.0);
  const Axis all = fit_axis(cnn, {false, 280, false, 11, false});
  EXPECT_LE(all.low, 10.0);
}

TEST(PlotTextTest, NumbersReadShort) {
  EXPECT_EQ(number_text(10), "10");
  EXPECT_EQ(number_text(2.5), "2.5");
  EXPECT_EQ(number_text(1e-5), "1e-5");
  EXPECT_EQ(number_text(3e6), "3e6");
  EXPECT_EQ(tick_text(57.5, 0.5), "57.5");
  EXPECT_EQ(tick_text(58, 0.5), "58.0");
  EXPECT_EQ(tick_text(-0.0, 1), "0");
  EXPECT_EQ(tick_text(400, 100), "400");
}

}  // namespace
}  // namespace qccl::tools
