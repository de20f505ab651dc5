// Outlier rows in the GPT's initial weights (--gpt-outliers ROWS:SCALE, for
// studying quantization without buckets, QSDP §6): rows ⌊j·out/R⌋ of every
// block's linear weight are exactly the plain initialisation's times the
// scale, everything else is unchanged; the option's text form is read
// strictly and out-of-range settings are refused.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>
#include <string>

#include "qccl/common/errors.h"
#include "qccl/models/model_config.h"
#include "qccl/models/tasks.h"

namespace qccl::engines {
namespace {

ModelConfig small_gpt() {
  ModelConfig config;
  config.model = "gpt";
  config.hidden = 40;
  config.layers = 2;
  config.sequence_length = 16;
  return config;
}

TEST(GptOutliers, RowsAreThePlainRowsTimesTheScale) {
  ModelConfig with = small_gpt();
  set_gpt_outliers(with, "3:16");
  auto plain = make_task(small_gpt());
  auto outliers = make_task(with);
  plain->initialize(5);
  outliers->initialize(5);
  const auto plain_parameters = plain->model().named_parameters();
  std::size_t scaled_matrices = 0;
  for (const auto& item : outliers->model().named_parameters()) {
    const torch::Tensor& got = item.value();
    const torch::Tensor& base = plain_parameters[item.key()];
    const bool block_weight = item.key().starts_with("blocks.") &&
                              item.key().ends_with(".weight") && got.dim() == 2;
    if (!block_weight) {
      EXPECT_TRUE(torch::equal(got, base)) << item.key();
      continue;
    }
    ++scaled_matrices;
    const auto rows = static_cast<std::size_t>(got.size(0));
    std::set<std::size_t> outlier_rows;
    for (std::size_t j = 0; j < 3; ++j) outlier_rows.insert(j * rows / 3);
    for (std::size_t r = 0; r < rows; ++r) {
      const auto row = static_cast<std::int64_t>(r);
      // ×16 is exact in fp32: bitwise equal.
      const torch::Tensor expected = outlier_rows.count(r) ? base[row] * 16 : base[row];
      EXPECT_TRUE(torch::equal(got[row], expected)) << item.key() << " row " << r;
    }
  }
  EXPECT_EQ(scaled_matrices, 2u * 4);  // qkv, proj, up, down of 2 blocks
}

TEST(GptOutliers, ReadsRowsAndScale) {
  ModelConfig config = small_gpt();
  set_gpt_outliers(config, "2:16");
  EXPECT_EQ(config.gpt_outlier_rows, 2u);
  EXPECT_EQ(config.gpt_outlier_scale, 16.0);
  EXPECT_EQ(gpt_outliers_text(config), ", outlier rows 2 x16");
  set_gpt_outliers(config, "0:1");
  EXPECT_EQ(gpt_outliers_text(config), "");
  EXPECT_NO_THROW(validate(config));
}

TEST(GptOutliers, RefusesOtherFormsAndSettings) {
  for (const char* bad : {"2", ":16", "a:16", "2:x", "2:16x", "-1:2", "2:", ""}) {
    ModelConfig config = small_gpt();
    EXPECT_THROW(set_gpt_outliers(config, bad), InvalidArgument) << bad;
  }
  ModelConfig zero_scale = small_gpt();
  set_gpt_outliers(zero_scale, "1:0");
  EXPECT_THROW(validate(zero_scale), InvalidArgument);
  ModelConfig too_many = small_gpt();
  set_gpt_outliers(too_many, "41:2");  // more rows than the width
  EXPECT_THROW(validate(too_many), InvalidArgument);
  ModelConfig other_model = small_gpt();
  other_model.model = "char-lstm";
  set_gpt_outliers(other_model, "1:2");
  EXPECT_THROW(validate(other_model), InvalidArgument);
}

}  // namespace
}  // namespace qccl::engines
