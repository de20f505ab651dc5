// Point labels: beside their point when there is room, else at a free spot
// with a line to the point; never over one another, an obstacle or the
// area's edge; and left out rather than overlapping when nothing is free.
#include <gtest/gtest.h>

#include "qccl/reports/label_placement.h"

namespace qccl::tools {
namespace {

const Box kArea{0, 0, 400, 300};

void expect_apart(const std::vector<PlacedLabel>& labels, const std::vector<Box>& obstacles) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (!labels[i].placed) continue;
    EXPECT_TRUE(kArea.contains(labels[i].box)) << i;
    for (const auto& o : obstacles) EXPECT_FALSE(labels[i].box.overlaps(o)) << i;
    for (std::size_t j = i + 1; j < labels.size(); ++j) {
      if (!labels[j].placed) continue;
      EXPECT_FALSE(labels[i].box.overlaps(labels[j].box)) << i << " and " << j;
      if (labels[i].leader && labels[j].leader) {
        EXPECT_FALSE(segments_cross(labels[i].leader_from, labels[i].leader_to,
                                    labels[j].leader_from, labels[j].leader_to));
      }
      if (labels[j].leader) {
        EXPECT_FALSE(segment_hits_box(labels[j].leader_from, labels[j].leader_to, labels[i].box));
      }
    }
  }
}

TEST(LabelPlacementTest, ALoneLabelSitsBesideItsPoint) {
  const Box marker{195, 145, 205, 155};
  const auto labels = place_labels({{{200, 150}, 5, "fp32"}}, kArea, {marker}, 11);
  ASSERT_TRUE(labels[0].placed);
  EXPECT_FALSE(labels[0].leader);
  EXPECT_NEAR(labels[0].box.left, 207, 1e-9) << "just right of the marker";
  EXPECT_NEAR((labels[0].box.top + labels[0].box.bottom) / 2, 150, 1e-9);
  // At the right edge it goes to the left instead.
  const auto edge = place_labels({{{395, 150}, 5, "fp32"}}, kArea, {}, 11);
  ASSERT_TRUE(edge[0].placed);
  EXPECT_LE(edge[0].box.right, 390);
}

TEST(LabelPlacementTest, PointsOnOneSpotAllGetLabelsWithLinesThatDoNotCross) {
  std::vector<LabelRequest> requests;
  std::vector<Box> markers;
  for (int i = 0; i < 12; ++i) {
    const Point at{200.0 + i % 3, 150.0 + i % 2};
    requests.push_back({at, 5, "label number " + std::to_string(i)});
    markers.push_back({at.x - 5, at.y - 5, at.x + 5, at.y + 5});
  }
  const auto labels = place_labels(requests, kArea, markers, 11);
  int leaders = 0;
  for (const auto& label : labels) {
    EXPECT_TRUE(label.placed);
    leaders += label.leader;
  }
  EXPECT_GE(leaders, 4);
  expect_apart(labels, markers);
}

TEST(LabelPlacementTest, ARowOfPointsOnOneLineAllGetLabels) {
  std::vector<LabelRequest> requests;
  std::vector<Box> markers;
  for (int i = 0; i < 17; ++i) {
    const Point at{20 + 21.0 * i, 150};
    requests.push_back({at, 5, "qccl:codec-" + std::to_string(i)});
    markers.push_back({at.x - 5, at.y - 5, at.x + 5, at.y + 5});
  }
  const auto labels = place_labels(requests, kArea, markers, 11);
  for (const auto& label : labels) EXPECT_TRUE(label.placed);
  expect_apart(labels, markers);
}

TEST(LabelPlacementTest, WithNoRoomALabelIsLeftOutRatherThanOverlap) {
  const Box small{0, 0, 60, 20};
  const auto labels =
      place_labels({{{30, 10}, 3, "a label far too long for the area"}}, small, {}, 11);
  EXPECT_FALSE(labels[0].placed);
}

TEST(LabelPlacementTest, LabelsKeepClearOfObstacles) {
  const std::vector<Box> obstacles = {{0, 0, 400, 140}, {0, 160, 400, 300}, {206, 140, 400, 160}};
  const auto labels = place_labels({{{200, 150}, 3, "x"}}, kArea, obstacles, 11);
  ASSERT_TRUE(labels[0].placed);
  expect_apart(labels, obstacles);
  EXPECT_LT(labels[0].box.right, 200) << "the only room is left of the point";
}

}  // namespace
}  // namespace qccl::tools
