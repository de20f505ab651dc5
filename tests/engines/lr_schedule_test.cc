// Learning-rate schedules: closed-form values at the warm-up, the middle and
// the end of a run (no libtorch).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "qccl/common/errors.h"
#include "qccl/engines/lr_schedule.h"

namespace qccl::engines {
namespace {

TEST(LrSchedule, ConstantWithWarmup) {
  const LrSchedule s{"constant", 0.1, 4, 100};
  EXPECT_DOUBLE_EQ(learning_rate(s, 0), 0.025);
  EXPECT_DOUBLE_EQ(learning_rate(s, 3), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(s, 99), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(s, 1000), 0.1);
}

TEST(LrSchedule, CosineFromBaseToZero) {
  const LrSchedule s{"cosine", 0.2, 10, 110};
  EXPECT_DOUBLE_EQ(learning_rate(s, 9), 0.2);   // last warm-up step
  EXPECT_DOUBLE_EQ(learning_rate(s, 10), 0.2);  // p = 0
  EXPECT_NEAR(learning_rate(s, 60), 0.1, 1e-15);  // p = 1/2
  EXPECT_NEAR(learning_rate(s, 35), 0.2 * 0.5 * (1 + std::cos(std::numbers::pi / 4)), 1e-15);
  EXPECT_NEAR(learning_rate(s, 110), 0.0, 1e-15);
  for (std::size_t k = 11; k < 110; ++k) EXPECT_LT(learning_rate(s, k), learning_rate(s, k - 1));
}

TEST(LrSchedule, LinearDecay) {
  const LrSchedule s{"linear", 1.0, 0, 8};
  EXPECT_DOUBLE_EQ(learning_rate(s, 0), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate(s, 2), 0.75);
  EXPECT_DOUBLE_EQ(learning_rate(s, 8), 0.0);
}

TEST(LrSchedule, RejectsUnknownShapesAndTooLongWarmup) {
  EXPECT_THROW(validate(LrSchedule{"step", 0.1, 0, 10}), InvalidArgument);
  EXPECT_THROW(validate(LrSchedule{"cosine", 0.1, 10, 10}), InvalidArgument);
  EXPECT_NO_THROW(validate(LrSchedule{"constant", 0.1, 10, 10}));
}

}  // namespace
}  // namespace qccl::engines
