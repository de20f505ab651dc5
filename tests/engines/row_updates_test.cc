// Row-wise updates of embedding tables: lazy Adam equals libtorch's Adam
// restricted to the rows a step touched, bit for bit, and leaves every other
// row and its moments alone; row-wise Adagrad on rows equals it on the dense
// gradient, bit for bit, and follows its formula; a group that takes rows
// densely updates as with the dense gradient; checkpoints resume exactly;
// what cannot work is refused.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <sstream>

#include "qccl/common/errors.h"
#include "qccl/engines/optimizers.h"
#include "qccl/training/optimizer_choice.h"

namespace qccl::engines {
namespace {

namespace optim = torch::optim;

constexpr std::int64_t kRows = 37, kWidth = 5;

// A table of 37 rows of 5 (or its transpose's rows when `transposed`: a
// non-contiguous view, which lazy Adam updates with libtorch's operations).
torch::Tensor table(bool transposed = false) {
  const auto values = torch::sin(torch::arange(kRows * kWidth, torch::kFloat) * 0.37f);
  if (!transposed) return values.reshape({kRows, kWidth}).clone().requires_grad_();
  return values.reshape({kWidth, kRows}).clone().t().requires_grad_();
}

// Step `step`'s rows (distinct, sorted) and their gradient values.
torch::Tensor rows_of_step(int step) {
  std::vector<std::int64_t> rows;
  for (std::int64_t r = step % 3; r < kRows; r += 4 + step) rows.push_back(r);
  return torch::tensor(rows);
}
torch::Tensor values_of_step(int step, std::int64_t rows) {
  return torch::cos(torch::arange(rows * kWidth, torch::kFloat) * (0.9f + step)).reshape({rows, kWidth}) *
         std::pow(10.0f, static_cast<float>(step - 1));
}
torch::Tensor sparse_gradient(int step) {
  const auto rows = rows_of_step(step);
  return torch::sparse_coo_tensor(rows.unsqueeze(0), values_of_step(step, rows.size(0)), {kRows, kWidth})
      .coalesce();
}

template <class State>
State& state_of(optim::Optimizer& optimizer, const torch::Tensor& p) {
  return static_cast<State&>(*optimizer.state().at(c10::guts::to_string(p.unsafeGetTensorImpl())));
}

struct LazyCase {
  bool adamw;
  bool amsgrad;
  double decay;
  bool transposed;
};

void PrintTo(const LazyCase& c, std::ostream* out) {
  *out << (c.adamw ? "adamw" : "adam") << (c.amsgrad ? " amsgrad" : "") << " decay " << c.decay
       << (c.transposed ? " transposed" : "");
}

class LazyAdamTest : public ::testing::TestWithParam<LazyCase> {};

// The reference keeps the whole table, moments and step count; each step
// it gathers the touched rows, runs libtorch's own Adam (or AdamW) on them
// from the gathered moments, and scatters the results back.
template <class Libtorch, class State, class Options>
void expect_lazy_equals_restricted(const LazyCase& c, Options options) {
  auto p = table(c.transposed);
  InPlace<Libtorch> lazy(std::vector<torch::Tensor>{p}, options);
  lazy.set_group_rule(0, {RowUpdate::lazy_adam, 1.0});
  auto reference = table(c.transposed).detach();
  auto m = torch::zeros({kRows, kWidth}), v = torch::zeros({kRows, kWidth});
  auto v_max = torch::zeros({kRows, kWidth});
  for (int step = 0; step < 3; ++step) {
    const auto before = p.detach().clone();
    p.mutable_grad() = sparse_gradient(step);
    lazy.step();
    const auto rows = rows_of_step(step);
    auto gathered = reference.index_select(0, rows).requires_grad_();
    Libtorch adam(std::vector<torch::Tensor>{gathered}, options);
    auto state = std::make_unique<State>();
    state->step(step);
    state->exp_avg(m.index_select(0, rows));
    state->exp_avg_sq(v.index_select(0, rows));
    if (c.amsgrad) state->max_exp_avg_sq(v_max.index_select(0, rows));
    adam.state()[c10::guts::to_string(gathered.unsafeGetTensorImpl())] = std::move(state);
    gathered.mutable_grad() = values_of_step(step, rows.size(0));
    adam.step();
    const auto& after = state_of<State>(adam, gathered);
    torch::NoGradGuard no_grad;
    reference.index_copy_(0, rows, gathered);
    m.index_copy_(0, rows, after.exp_avg());
    v.index_copy_(0, rows, after.exp_avg_sq());
    if (c.amsgrad) v_max.index_copy_(0, rows, after.max_exp_avg_sq());
    const auto& mine = state_of<State>(lazy, p);
    ASSERT_TRUE(torch::equal(p.detach(), reference)) << "step " << step;
    ASSERT_TRUE(torch::equal(mine.exp_avg(), m)) << "step " << step;
    ASSERT_TRUE(torch::equal(mine.exp_avg_sq(), v)) << "step " << step;
    if (c.amsgrad) {
      ASSERT_TRUE(torch::equal(mine.max_exp_avg_sq(), v_max));
    }
    EXPECT_EQ(mine.step(), step + 1);
    // Rows the step did not touch: the bits of before the step.
    auto untouched = torch::ones({kRows}, torch::kBool);
    untouched.index_fill_(0, rows, false);
    EXPECT_TRUE(torch::equal(p.detach().index({untouched}), before.index({untouched})));
  }
}

TEST_P(LazyAdamTest, EqualsAdamRestrictedToTheTouchedRowsBitForBit) {
  const auto c = GetParam();
  if (c.adamw) {
    expect_lazy_equals_restricted<optim::AdamW, optim::AdamWParamState>(
        c, optim::AdamWOptions(0.01).amsgrad(c.amsgrad).weight_decay(c.decay));
  } else {
    expect_lazy_equals_restricted<optim::Adam, optim::AdamParamState>(
        c, optim::AdamOptions(0.01).betas({0.8, 0.99}).amsgrad(c.amsgrad).weight_decay(c.decay));
  }
}

INSTANTIATE_TEST_SUITE_P(Options, LazyAdamTest,
                         ::testing::Values(LazyCase{false, false, 0.0, false},
                                           LazyCase{false, true, 0.03, false},
                                           LazyCase{true, false, 0.1, false},
                                           LazyCase{true, true, 0.1, false},
                                           LazyCase{false, true, 0.03, true},
                                           LazyCase{true, false, 0.1, true}));

// A dense gradient touches every row: lazy Adam is then Adam.
TEST(LazyAdam, ADenseGradientIsAdam) {
  auto lazy_p = table(), dense_p = table();
  InPlaceAdam lazy(std::vector<torch::Tensor>{lazy_p}, optim::AdamOptions(0.01));
  InPlaceAdam dense(std::vector<torch::Tensor>{dense_p}, optim::AdamOptions(0.01));
  lazy.set_group_rule(0, {RowUpdate::lazy_adam, 1.0});
  for (int step = 0; step < 3; ++step) {
    lazy_p.mutable_grad() = sparse_gradient(step).to_dense();
    dense_p.mutable_grad() = sparse_gradient(step).to_dense();
    lazy.step();
    dense.step();
    EXPECT_TRUE(torch::equal(lazy_p, dense_p)) << "step " << step;
  }
}

// The default rule takes rows as the dense gradient they stand for: SGD
// (momentum, Nesterov, decay), Adam and AdamW give the dense bits, also
// from rows given twice (summed, as coalescing does) and out of order.
template <class Optimizer, class Options>
void expect_rows_as_dense(Options options) {
  auto rows_p = table(), dense_p = table();
  Optimizer with_rows(std::vector<torch::Tensor>{rows_p}, options);
  Optimizer with_dense(std::vector<torch::Tensor>{dense_p}, options);
  for (int step = 0; step < 3; ++step) {
    const auto rows = rows_of_step(step).flip(0);
    const auto twice = torch::cat({rows, rows.narrow(0, 0, 2)});
    const auto values = values_of_step(step, twice.size(0));
    const auto grad = torch::sparse_coo_tensor(twice.unsqueeze(0), values, {kRows, kWidth});
    rows_p.mutable_grad() = grad;
    dense_p.mutable_grad() = grad.to_dense();
    with_rows.step();
    with_dense.step();
    EXPECT_TRUE(torch::equal(rows_p, dense_p)) << "step " << step;
  }
}

TEST(DenseRule, RowsUpdateAsTheDenseGradient) {
  expect_rows_as_dense<InPlaceSGD>(optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01));
  expect_rows_as_dense<InPlaceAdam>(optim::AdamOptions(0.01).amsgrad(true).weight_decay(0.02));
  expect_rows_as_dense<InPlaceAdamW>(optim::AdamWOptions(0.01).weight_decay(0.1));
}

// Row-wise Adagrad: rows equal the dense gradient with zeros elsewhere, bit
// for bit (a zero row changes nothing); the result follows
//   G_r += mean_j g_rj², p_rj −= lr/(√G_r + ε)·g_rj
// computed in double within float rounding: a few ulp of values of order
// 1 over three steps, far below 1e-5.
TEST(RowwiseAdagrad, RowsEqualTheDenseGradientAndFollowTheFormula) {
  auto rows_p = table(), dense_p = table();
  const auto options = optim::AdamOptions(0.1).eps(1e-6);
  InPlaceAdam with_rows(std::vector<torch::Tensor>{rows_p}, options);
  InPlaceAdam with_dense(std::vector<torch::Tensor>{dense_p}, options);
  with_rows.set_group_rule(0, {RowUpdate::rowwise_adagrad, 1.0});
  with_dense.set_group_rule(0, {RowUpdate::rowwise_adagrad, 1.0});
  auto expected = table().detach().to(torch::kDouble);
  auto accumulator = torch::zeros({kRows}, torch::kDouble);
  for (int step = 0; step < 3; ++step) {
    rows_p.mutable_grad() = sparse_gradient(step);
    dense_p.mutable_grad() = sparse_gradient(step).to_dense();
    with_rows.step();
    with_dense.step();
    ASSERT_TRUE(torch::equal(rows_p, dense_p)) << "step " << step;
    EXPECT_TRUE(torch::equal(state_of<optim::AdamParamState>(with_rows, rows_p).exp_avg_sq(),
                             state_of<optim::AdamParamState>(with_dense, dense_p).exp_avg_sq()));
    const auto g = sparse_gradient(step).to_dense().to(torch::kDouble);
    accumulator += g.pow(2).mean(1);
    expected -= (0.1 / (accumulator.sqrt() + 1e-6)).unsqueeze(1) * g;
    EXPECT_LT((rows_p.detach().to(torch::kDouble) - expected).abs().max().item<double>(), 1e-5);
  }
  EXPECT_EQ(state_of<optim::AdamParamState>(with_rows, rows_p).exp_avg_sq().numel(), kRows);
}

// Two steps, a checkpoint, two more: the same bits as four steps straight,
// for both row updates (their states in libtorch's checkpoint format).
TEST(RowUpdateCheckpoint, ResumesExactly) {
  for (const auto rule : {RowUpdate::lazy_adam, RowUpdate::rowwise_adagrad}) {
    const auto options = optim::AdamOptions(0.02).amsgrad(rule == RowUpdate::lazy_adam);
    auto straight_p = table(), resumed_p = table();
    InPlaceAdam straight(std::vector<torch::Tensor>{straight_p}, options);
    straight.set_group_rule(0, {rule, 1.0});
    std::stringstream saved;
    {
      auto first_p = table();
      InPlaceAdam first(std::vector<torch::Tensor>{first_p}, options);
      first.set_group_rule(0, {rule, 1.0});
      for (int step = 0; step < 2; ++step) {
        first_p.mutable_grad() = sparse_gradient(step);
        first.step();
      }
      torch::serialize::OutputArchive archive;
      first.save(archive);
      archive.save_to(saved);
      torch::NoGradGuard no_grad;
      resumed_p.copy_(first_p);
    }
    InPlaceAdam resumed(std::vector<torch::Tensor>{resumed_p}, options);
    resumed.set_group_rule(0, {rule, 1.0});
    torch::serialize::InputArchive archive;
    archive.load_from(saved);
    resumed.load(archive);
    for (int step = 0; step < 4; ++step) {
      straight_p.mutable_grad() = sparse_gradient(step);
      straight.step();
      if (step < 2) continue;
      resumed_p.mutable_grad() = sparse_gradient(step);
      resumed.step();
    }
    EXPECT_TRUE(torch::equal(straight_p, resumed_p)) << name_of(rule);
    EXPECT_TRUE(torch::equal(state_of<optim::AdamParamState>(straight, straight_p).exp_avg_sq(),
                             state_of<optim::AdamParamState>(resumed, resumed_p).exp_avg_sq()));
  }
}

// A checkpoint of one row update is not misread by the other.
TEST(RowUpdateCheckpoint, RefusesAStateOfTheOtherRowUpdate) {
  auto p = table();
  InPlaceAdam lazy(std::vector<torch::Tensor>{p}, optim::AdamOptions(0.01));
  lazy.set_group_rule(0, {RowUpdate::lazy_adam, 1.0});
  p.mutable_grad() = sparse_gradient(0);
  lazy.step();
  std::stringstream saved;
  torch::serialize::OutputArchive out;
  lazy.save(out);
  out.save_to(saved);
  auto q = table();
  InPlaceAdam adagrad(std::vector<torch::Tensor>{q}, optim::AdamOptions(0.01));
  adagrad.set_group_rule(0, {RowUpdate::rowwise_adagrad, 1.0});
  torch::serialize::InputArchive in;
  in.load_from(saved);
  adagrad.load(in);
  q.mutable_grad() = sparse_gradient(1);
  try {
    adagrad.step();
    FAIL() << "a lazy-Adam state was taken for row-wise Adagrad's";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("another row update"), std::string::npos) << e.what();
  }
}

TEST(GroupRules, RefuseWhatCannotWork) {
  auto p = table();
  InPlaceSGD sgd(std::vector<torch::Tensor>{p}, optim::SGDOptions(0.1));
  EXPECT_THROW(sgd.set_group_rule(0, {RowUpdate::lazy_adam, 1.0}), InvalidArgument);
  sgd.set_group_rule(0, {RowUpdate::dense, 2.0});
  InPlaceAdam decayed(std::vector<torch::Tensor>{p}, optim::AdamOptions(0.1).weight_decay(0.01));
  EXPECT_THROW(decayed.set_group_rule(0, {RowUpdate::rowwise_adagrad, 1.0}), InvalidArgument);
  EXPECT_THROW(decayed.set_group_rule(1, {RowUpdate::lazy_adam, 1.0}), InvalidArgument);  // no group 1
  EXPECT_THROW(decayed.set_group_rule(0, {RowUpdate::lazy_adam, 0.0}), InvalidArgument);
  EXPECT_THROW(row_update_from_name("sparse-adam"), InvalidArgument);
  // A row beyond the table (a tensor built without torch's checks) is
  // refused before any memory is touched.
  auto q = table();
  InPlaceAdam lazy(std::vector<torch::Tensor>{q}, optim::AdamOptions(0.1));
  lazy.set_group_rule(0, {RowUpdate::lazy_adam, 1.0});
  q.mutable_grad() = torch::_sparse_coo_tensor_unsafe(torch::tensor({{kRows}}),
                                                      torch::ones({1, kWidth}), {kRows, kWidth})
                         ._coalesced_(true);
  EXPECT_THROW(lazy.step(), InvalidArgument);
  EXPECT_EQ(row_update_from_name("rowwise-adagrad"), RowUpdate::rowwise_adagrad);
}

// The run's optimizer: the tables in a group of their own with the row
// update and a learning rate that the schedule scales with the run's.
TEST(MakeOptimizerTest, PutsTheTablesInAGroupWithTheirRule) {
  TrainConfig config;
  config.optimizer = "adam";
  config.lr = 0.01;
  config.embedding_optimizer = "rowwise-adagrad";
  config.embedding_lr = 0.1;
  auto embedding = torch::nn::Embedding(torch::nn::EmbeddingOptions(10, 3).sparse(true));
  auto dense = torch::nn::Embedding(torch::nn::EmbeddingOptions(10, 3));
  torch::nn::Sequential model(embedding, dense);
  const auto tables = sparse_embedding_tables(*model);
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_TRUE(tables[0].is_same(embedding->weight));
  auto optimizer = make_optimizer(config, model->parameters(), tables);
  ASSERT_EQ(optimizer->param_groups().size(), 2u);
  EXPECT_TRUE(optimizer->param_groups()[1].params()[0].is_same(embedding->weight));
  EXPECT_EQ(dynamic_cast<GroupRules&>(*optimizer).group_rule(1).rows, RowUpdate::rowwise_adagrad);
  set_learning_rate(*optimizer, 0.005);  // half the base rate, as a schedule would
  EXPECT_DOUBLE_EQ(optimizer->param_groups()[0].options().get_lr(), 0.005);
  EXPECT_DOUBLE_EQ(optimizer->param_groups()[1].options().get_lr(), 0.05);
  EXPECT_THROW(make_optimizer(config, model->parameters(), {}), InvalidArgument);  // no tables
  config.embedding_optimizer = "dense";
  config.embedding_lr = 0;
  EXPECT_EQ(make_optimizer(config, model->parameters(), tables)->param_groups().size(), 1u);
}

}  // namespace
}  // namespace qccl::engines
