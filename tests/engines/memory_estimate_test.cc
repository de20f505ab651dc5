// Sizing a run before it starts: the parameter count from the sizes alone
// equals the built model's (an exact bound for the character models, whose
// alphabet is taken at 256), and the memory estimate counts each tensor a
// rank must hold.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "qccl/models/model_config.h"
#include "qccl/models/tasks.h"
#include "qccl/training/memory_estimate.h"

namespace qccl::engines {
namespace {

struct Built {
  std::uint64_t parameters = 0;
  std::uint64_t vocabulary = 0;  // rows of the character embedding; 0 for the others
};

Built build(const TrainConfig& config) {
  auto task = make_task(config);
  Built built;
  for (const auto& item : task->model().named_parameters()) {
    built.parameters += static_cast<std::uint64_t>(item.value().numel());
    if (item.key() == "tokens.weight" || item.key() == "embed.weight") {
      built.vocabulary = static_cast<std::uint64_t>(item.value().size(0));
    }
  }
  return built;
}

TrainConfig small(const std::string& model) {
  TrainConfig config;
  config.model = model;
  config.hidden = 48;
  config.layers = 2;
  config.sequence_length = 16;
  config.fields = 3;
  config.values_per_field = 50;
  config.click_samples = 100;
  return config;
}

TEST(ParameterCount, FromTheSizesEqualsTheBuiltModels) {
  for (const std::string model : {"mlp", "cnn", "resmlp", "recommender"}) {
    SCOPED_TRACE(model);
    const auto config = small(model);
    EXPECT_EQ(parameter_count_bound(config), build(config).parameters);
  }
  // The character models' bound takes a 256-byte alphabet: it exceeds the
  // built model by exactly the missing rows of the tables that depend on it
  // (the LSTM's embedding of 64 and its head, weights and bias; the GPT's
  // tied token embedding).
  const auto lstm = small("char-lstm");
  const auto lstm_built = build(lstm);
  EXPECT_EQ(parameter_count_bound(lstm),
            lstm_built.parameters + (256 - lstm_built.vocabulary) * (64 + lstm.hidden + 1));
  const auto gpt = small("gpt");
  const auto gpt_built = build(gpt);
  EXPECT_EQ(parameter_count_bound(gpt),
            gpt_built.parameters + (256 - gpt_built.vocabulary) * gpt.hidden);
}

TEST(MemoryEstimate, CountsWeightsGradientsBuffersOptimizerAndData) {
  auto config = small("mlp");
  const std::uint64_t p = parameter_count_bound(config);
  const std::uint64_t data = 70000 * 785;
  config.optimizer = "sgd";
  config.momentum = 0.9;  // one momentum buffer
  EXPECT_EQ(estimate_memory(config, 4).per_rank_bytes, p * 4 * 4 + data);
  config.momentum = 0;
  EXPECT_EQ(estimate_memory(config, 4).per_rank_bytes, p * 4 * 3 + data);
  config.optimizer = "adam";  // two moments
  EXPECT_EQ(estimate_memory(config, 4).per_rank_bytes, p * 4 * 5 + data);
  // Sharded ranks hold whole weights, and 1/n of the rest.
  config.engine = "sharded";
  EXPECT_EQ(estimate_memory(config, 4).per_rank_bytes, p * 4 + p * 4 * 4 / 4 + data);
  const auto estimate = estimate_memory(config, 4);
  EXPECT_EQ(estimate.host_bytes(8, 2),
            2 * (estimate.per_process_bytes + 8 * estimate.per_rank_bytes));
  EXPECT_EQ(model_size_options(config), "");
  EXPECT_EQ(model_size_options(small("gpt")), "--hidden, --layers, --sequence-length");
}

}  // namespace
}  // namespace qccl::engines
