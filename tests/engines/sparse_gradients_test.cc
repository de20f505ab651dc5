// Sparse embedding gradients end to end: the data-parallel engine takes an
// embedding's sparse rows, hands the codec their support, and leaves in
// .grad the same means, bit for bit, as for the dense gradient of the same
// table — on every rank count, with Global-QSGD's sparse path and with a
// codec that ignores the support — so dense optimizers update as before.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <memory>
#include <set>
#include <vector>

#include "qccl/common/errors.h"
#include "qccl/engines/data_parallel.h"
#include "support/world.h"

namespace qccl::engines {
namespace {

namespace nn = torch::nn;

// A table of `rows` rows of 4 (50 unless given) and a linear head; rank r
// looks up 6 distinct rows (no row twice in a batch, so the sparse and
// dense backward sum the same single term per row), some shared with other
// ranks.
struct TinyRecommender {
  std::int64_t rows;
  nn::Embedding table;
  nn::Linear head{nn::LinearOptions(4, 1)};
  explicit TinyRecommender(bool sparse, std::int64_t rows = 50)
      : rows(rows), table(nn::EmbeddingOptions(rows, 4).sparse(sparse)) {
    // Fixed values (not the global generator, which the rank threads share).
    torch::NoGradGuard no_grad;
    table->weight.copy_(torch::sin(torch::arange(rows * 4, torch::kFloat) * 0.7f).reshape({rows, 4}));
    head->weight.copy_(torch::cos(torch::arange(4, torch::kFloat) * 1.3f).reshape({1, 4}));
    head->bias.fill_(0.1f);
  }
  std::vector<NamedTensor> parameters() {
    return {{"table", table->weight}, {"head.weight", head->weight}, {"head.bias", head->bias}};
  }
  torch::Tensor loss(int rank, int step) {
    std::vector<std::int64_t> rows;  // spread over the table
    for (int k = 0; k < 6; ++k) rows.push_back((rank * 5 + k * 7 + step * 3) % 50 * (this->rows / 50));
    return head(table(torch::tensor(rows))).pow(2).mean();
  }
};

struct SparseGradientsCase {
  int ranks;
  const char* codec;
};

void PrintTo(const SparseGradientsCase& c, std::ostream* out) { *out << c.ranks << " " << c.codec; }

class SparseGradientsTest : public ::testing::TestWithParam<SparseGradientsCase> {};

TEST_P(SparseGradientsTest, RowsGiveTheMeansOfTheDenseGradientBitForBit) {
  const auto [ranks, codec] = GetParam();
  test::run_world(ranks, [codec = std::string(codec)](Communicator& comm) {
    TinyRecommender sparse(true), dense(false);
    EngineOptions options;
    options.codec = CodecSpec::parse(codec);
    DataParallelEngine sparse_engine(comm, sparse.parameters(), options);
    DataParallelEngine dense_engine(comm, dense.parameters(), options);
    for (int step = 0; step < 3; ++step) {
      OracleResult a, b;
      sparse_engine.compute_gradients([&] { return sparse.loss(comm.rank(), step); }, a);
      dense_engine.compute_gradients([&] { return dense.loss(comm.rank(), step); }, b);
      ASSERT_FALSE(sparse.table->weight.grad().is_sparse());
      EXPECT_TRUE(torch::equal(sparse.table->weight.grad(), dense.table->weight.grad()))
          << codec << " step " << step;
      EXPECT_TRUE(torch::equal(sparse.head->weight.grad(), dense.head->weight.grad()));
      // The same update on both, as a dense optimizer makes it.
      torch::NoGradGuard no_grad;
      for (auto* model : {&sparse, &dense}) {
        model->table->weight.sub_(model->table->weight.grad() * 0.5f);
        model->head->weight.sub_(model->head->weight.grad() * 0.5f);
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(
    RanksAndCodecs, SparseGradientsTest,
    ::testing::Values(SparseGradientsCase{1, "global-qsgd:sparse=auto"},
                      SparseGradientsCase{2, "global-qsgd:sparse=auto"},
                      SparseGradientsCase{3, "global-qsgd:sparse=auto"},
                      SparseGradientsCase{4, "global-qsgd:dither=exp,sparse=auto"},
                      SparseGradientsCase{4, "global-qsgd:bits=4,sparse=auto"},
                      SparseGradientsCase{7, "global-qsgd:sparse=auto"},
                      SparseGradientsCase{3, "fp32"}, SparseGradientsCase{3, "intsgd"}));

// The rows rank r looks up in `step` (TinyRecommender::loss), over every
// rank: the rows of the step's mean.
std::vector<std::int64_t> rows_of_every_rank(int ranks, int step, std::int64_t table_rows) {
  std::set<std::int64_t> rows;
  for (int r = 0; r < ranks; ++r) {
    for (int k = 0; k < 6; ++k) rows.insert((r * 5 + k * 7 + step * 3) % 50 * (table_rows / 50));
  }
  return {rows.begin(), rows.end()};
}

// The same update on both models, as a dense optimizer makes it (a sparse
// .grad densified: the same bits as the dense one where the codec keeps zeros).
void descend(TinyRecommender& model) {
  torch::NoGradGuard no_grad;
  auto grad = model.table->weight.grad();
  model.table->weight.sub_((grad.is_sparse() ? grad.to_dense() : grad) * 0.5f);
  model.head->weight.sub_(model.head->weight.grad() * 0.5f);
}

class SparseMeansTest : public ::testing::TestWithParam<SparseGradientsCase> {};

// sparse_means: the table's .grad is a coalesced sparse tensor of exactly
// the rows some rank looked up (PyTorch's sparse allreduce gives the same
// indices), holding the dense means of those rows; every other row of the
// dense means is zero. Three steps, each with other rows, so rows left over
// from the last step would show.
TEST_P(SparseMeansTest, TheMeansComeAsTheRowsOfEveryRank) {
  const auto [ranks, codec] = GetParam();
  test::run_world(ranks, [codec = std::string(codec)](Communicator& comm) {
    TinyRecommender sparse(true), dense(false);
    EngineOptions options;
    options.codec = CodecSpec::parse(codec);
    DataParallelEngine dense_engine(comm, dense.parameters(), options);
    options.sparse_means = true;
    DataParallelEngine sparse_engine(comm, sparse.parameters(), options);
    for (int step = 0; step < 3; ++step) {
      OracleResult a, b;
      sparse_engine.compute_gradients([&] { return sparse.loss(comm.rank(), step); }, a);
      dense_engine.compute_gradients([&] { return dense.loss(comm.rank(), step); }, b);
      const auto grad = sparse.table->weight.grad();
      ASSERT_TRUE(grad.is_sparse()) << codec;
      ASSERT_TRUE(grad.is_coalesced());
      const auto expected_rows = rows_of_every_rank(comm.size(), step, 50);
      EXPECT_TRUE(torch::equal(grad._indices().flatten(), torch::tensor(expected_rows)))
          << codec << " step " << step;
      const auto& means = dense.table->weight.grad();
      EXPECT_TRUE(torch::equal(grad._values(), means.index_select(0, torch::tensor(expected_rows))));
      EXPECT_TRUE(torch::equal(grad.to_dense(), means)) << "a mean outside the rows is not zero";
      EXPECT_FALSE(sparse.head->weight.grad().is_sparse());
      EXPECT_TRUE(torch::equal(sparse.head->weight.grad(), dense.head->weight.grad()));
      EXPECT_EQ(sparse_engine.row_gradients().rows_in_step(), expected_rows.size());
      descend(sparse);
      descend(dense);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(
    RanksAndCodecs, SparseMeansTest,
    ::testing::Values(SparseGradientsCase{1, "global-qsgd:sparse=auto"},
                      SparseGradientsCase{2, "global-qsgd:sparse=auto"},
                      SparseGradientsCase{3, "global-qsgd:dither=exp,sparse=auto"},
                      SparseGradientsCase{4, "global-qsgd:bits=4,sparse=auto"},
                      SparseGradientsCase{7, "global-qsgd:sparse=auto"},
                      SparseGradientsCase{3, "fp32"}, SparseGradientsCase{4, "fp16"}));

// A codec that may make any row non-zero (IntSGD's) gives dense means, and
// sparse_means then a dense .grad: the same as without it.
TEST(SparseMeans, ACodecThatMayFillRowsGivesDenseMeans) {
  test::run_world(3, [](Communicator& comm) {
    TinyRecommender sparse(true), dense(false);
    EngineOptions options;
    options.codec = CodecSpec::parse("intsgd");
    DataParallelEngine dense_engine(comm, dense.parameters(), options);
    options.sparse_means = true;
    DataParallelEngine sparse_engine(comm, sparse.parameters(), options);
    for (int step = 0; step < 2; ++step) {
      OracleResult a, b;
      sparse_engine.compute_gradients([&] { return sparse.loss(comm.rank(), step); }, a);
      dense_engine.compute_gradients([&] { return dense.loss(comm.rank(), step); }, b);
      ASSERT_FALSE(sparse.table->weight.grad().is_sparse());
      EXPECT_TRUE(torch::equal(sparse.table->weight.grad(), dense.table->weight.grad()));
      descend(sparse);
      descend(dense);
    }
  });
}

// Rows reach the codec without a dense pass over the table: after the first
// step only the rows the last step left non-zero are cleared (step 0 finds
// fresh, zero buckets), so a step writes in proportion to the rows touched,
// not to the table's 200 000 elements; the means stay the dense ones. A
// codec that may fill any row (IntSGD) has the whole table cleared.
TEST(SparseMeans, OnlyTheLastStepsRowsAreCleared) {
  for (const int ranks : {1, 2, 4, 7}) {
    test::run_world(ranks, [](Communicator& comm) {
      constexpr std::int64_t kRows = 50000;
      TinyRecommender sparse(true, kRows), dense(false, kRows), filled(true, kRows);
      EngineOptions options;
      options.codec = CodecSpec::parse("global-qsgd:sparse=auto");
      DataParallelEngine sparse_engine(comm, sparse.parameters(), options);
      DataParallelEngine dense_engine(comm, dense.parameters(), options);
      options.codec = CodecSpec::parse("intsgd");
      DataParallelEngine filled_engine(comm, filled.parameters(), options);
      std::size_t last_rows = 0;
      for (int step = 0; step < 4; ++step) {
        OracleResult a, b, c;
        sparse_engine.compute_gradients([&] { return sparse.loss(comm.rank(), step); }, a);
        dense_engine.compute_gradients([&] { return dense.loss(comm.rank(), step); }, b);
        filled_engine.compute_gradients([&] { return filled.loss(comm.rank(), step); }, c);
        EXPECT_EQ(sparse_engine.row_gradients().elements_cleared(), last_rows * 4)
            << comm.size() << " ranks, step " << step;
        EXPECT_EQ(filled_engine.row_gradients().elements_cleared(), step == 0 ? 0u : kRows * 4);
        last_rows = rows_of_every_rank(comm.size(), step, kRows).size();
        EXPECT_TRUE(torch::equal(sparse.table->weight.grad(), dense.table->weight.grad()));
        descend(sparse);
        descend(dense);
        descend(filled);
      }
    });
  }
}

// A rank whose gradient of the table is dense makes it dense for every
// rank (its rows may be anywhere); every rank gets the same dense means.
TEST(SparseMeans, ADenseGradientOnOneRankMakesTheTableDenseEverywhere) {
  for (const int ranks : {2, 3, 4}) {
    test::run_world(ranks, [](Communicator& comm) {
      TinyRecommender mixed(comm.rank() != 0), dense(false);
      EngineOptions options;
      options.codec = CodecSpec::parse("global-qsgd:sparse=auto");
      DataParallelEngine dense_engine(comm, dense.parameters(), options);
      options.sparse_means = true;
      DataParallelEngine mixed_engine(comm, mixed.parameters(), options);
      for (int step = 0; step < 2; ++step) {
        OracleResult a, b;
        mixed_engine.compute_gradients([&] { return mixed.loss(comm.rank(), step); }, a);
        dense_engine.compute_gradients([&] { return dense.loss(comm.rank(), step); }, b);
        ASSERT_FALSE(mixed.table->weight.grad().is_sparse()) << "rank " << comm.rank();
        EXPECT_TRUE(torch::equal(mixed.table->weight.grad(), dense.table->weight.grad()));
        descend(mixed);
        descend(dense);
      }
    });
  }
}

// A step that fails (NaN on one rank) leaves the buckets in no known state:
// the next step clears whole tables and its means are right again.
TEST(SparseMeans, AFailedStepIsFollowedByAWholeClear) {
  test::run_world(3, [](Communicator& comm) {
    TinyRecommender sparse(true), dense(false);
    EngineOptions options;
    options.codec = CodecSpec::parse("global-qsgd:sparse=auto");
    DataParallelEngine dense_engine(comm, dense.parameters(), options);
    options.sparse_means = true;
    DataParallelEngine sparse_engine(comm, sparse.parameters(), options);
    const float poison = std::numeric_limits<float>::quiet_NaN();
    for (int step = 0; step < 3; ++step) {
      const bool fails = step == 1;
      const auto loss_of = [&](TinyRecommender& model) {
        auto loss = model.loss(comm.rank(), step);
        return fails && comm.rank() == 1 ? loss * poison : loss;
      };
      OracleResult a, b;
      if (fails) {
        EXPECT_THROW(sparse_engine.compute_gradients([&] { return loss_of(sparse); }, a), NonFiniteError);
        EXPECT_THROW(dense_engine.compute_gradients([&] { return loss_of(dense); }, b), NonFiniteError);
        continue;
      }
      sparse_engine.compute_gradients([&] { return loss_of(sparse); }, a);
      dense_engine.compute_gradients([&] { return loss_of(dense); }, b);
      if (step == 2) {
        EXPECT_EQ(sparse_engine.row_gradients().elements_cleared(), 50u * 4);
      }
      EXPECT_TRUE(torch::equal(sparse.table->weight.grad().to_dense(), dense.table->weight.grad()));
      descend(sparse);
      descend(dense);
    }
  });
}

// A dense model with a layer one rank leaves unused: that rank's region
// holds the last step's means, which no exchange of rows tells it are
// non-zero elsewhere, so it is cleared whole each step. The means equal
// those of a run where the rank uses the layer with a zero gradient.
TEST(SparseMeans, ALayerUnusedOnOneRankOfADenseModelContributesZero) {
  for (const int ranks : {2, 3, 4}) {
    test::run_world(ranks, [](Communicator& comm) {
      const auto make = [] {
        std::vector<nn::Linear> layers{nn::Linear(3, 2), nn::Linear(3, 2)};
        torch::NoGradGuard no_grad;
        for (std::size_t k = 0; k < layers.size(); ++k) {
          layers[k]->weight.copy_(torch::sin(torch::arange(6, torch::kFloat) + static_cast<float>(k)).reshape({2, 3}));
          layers[k]->bias.fill_(0.1f);
        }
        return layers;
      };
      auto unused = make(), zero = make();
      const auto parameters = [](std::vector<nn::Linear>& layers) {
        return std::vector<NamedTensor>{{"a.weight", layers[0]->weight}, {"a.bias", layers[0]->bias},
                                        {"b.weight", layers[1]->weight}, {"b.bias", layers[1]->bias}};
      };
      EngineOptions options;
      options.codec = CodecSpec::parse("fp32");
      DataParallelEngine unused_engine(comm, parameters(unused), options);
      DataParallelEngine zero_engine(comm, parameters(zero), options);
      for (int step = 0; step < 3; ++step) {
        const auto x = torch::full({1, 3}, 0.5f + static_cast<float>(step + comm.rank()));
        const bool skip = comm.rank() == 0;
        OracleResult a, b;
        unused_engine.compute_gradients([&] {
          auto loss = unused[0](x).sum();
          return skip ? loss : loss + unused[1](x).pow(2).sum();
        }, a);
        zero_engine.compute_gradients([&] {
          const auto second = zero[1](x).pow(2).sum();
          return zero[0](x).sum() + (skip ? second * 0.0f : second);
        }, b);
        EXPECT_TRUE(torch::equal(unused[1]->weight.grad(), zero[1]->weight.grad()))
            << comm.size() << " ranks, step " << step;
      }
    });
  }
}

}  // namespace
}  // namespace qccl::engines
