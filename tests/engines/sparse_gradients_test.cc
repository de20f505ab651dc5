// Sparse embedding gradients end to end: the data-parallel engine takes an
// embedding's sparse rows, hands the codec their support, and leaves in
// .grad the same means, bit for bit, as for the dense gradient of the same
// table — on every rank count, with Global-QSGD's sparse path and with a
// codec that ignores the support — so dense optimizers update as before.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "qccl/engines/data_parallel.h"
#include "support/world.h"

namespace qccl::engines {
namespace {

namespace nn = torch::nn;

// A table of 50 rows of 4 and a linear head; rank r looks up 6 distinct
// rows (no row twice in a batch, so the sparse and dense backward sum the
// same single term per row), some shared with other ranks.
struct TinyRecommender {
  nn::Embedding table;
  nn::Linear head{nn::LinearOptions(4, 1)};
  explicit TinyRecommender(bool sparse)
      : table(nn::EmbeddingOptions(50, 4).sparse(sparse)) {
    // Fixed values (not the global generator, which the rank threads share).
    torch::NoGradGuard no_grad;
    table->weight.copy_(torch::sin(torch::arange(200, torch::kFloat) * 0.7f).reshape({50, 4}));
    head->weight.copy_(torch::cos(torch::arange(4, torch::kFloat) * 1.3f).reshape({1, 4}));
    head->bias.fill_(0.1f);
  }
  std::vector<NamedTensor> parameters() {
    return {{"table", table->weight}, {"head.weight", head->weight}, {"head.bias", head->bias}};
  }
  torch::Tensor loss(int rank, int step) {
    std::vector<std::int64_t> rows;
    for (int k = 0; k < 6; ++k) rows.push_back((rank * 5 + k * 7 + step * 3) % 50);
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

}  // namespace
}  // namespace qccl::engines
