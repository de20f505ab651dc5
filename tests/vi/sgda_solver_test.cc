// Quantized SGDA (Beznosikov et al. 2022; the baseline of Q-GenX Appendix
// H.1) on in-process ranks: steps equal to a hand-computed iteration on a
// 2-dimensional game with both step rules, replicas identical and runs a
// function of the seed under the qgenx quantizer, and bad steps refused.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "../support/world.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"
#include "qccl/experiments/qgenx/sgda_solver.h"
#include "vi_test_helpers.h"

namespace qccl::vi {
namespace {

using test::run_world;

// f(x, y) = (a/2)x² + b·xy + m₁x − (a/2)y² − m₂y with a = ½, b = 1:
// A(x, y) = (x/2 + y + 2, y/2 − x + 0), i.e. M = [[½, 1], [−1, ½]], m = (2, 0).
AffineOperator tiny_game() {
  Matrix m(2);
  m(0, 0) = 0.5;
  m(0, 1) = 1.0;
  m(1, 0) = -1.0;
  m(1, 1) = 0.5;
  return AffineOperator(m, {2.0, 0.0});
}

SgdaSettings sgda(StepRule rule, double step) {
  SgdaSettings s;
  s.step_rule = rule;
  s.step = step;
  return s;
}

// Constant step γ = ¼ on one rank, no noise, fp32 (every value below is
// dyadic, so exact in fp32 and fp64):
//   X_1 = 0,        A(X_1) = (2, 0),       X_2 = (−½, 0)
//   A(X_2) = (−¼ + 2, ½) = (7/4, ½),       X_3 = (−½ − 7/16, −⅛) = (−15/16, −⅛)
// and the average (X_1 + X_2)/2 = (−¼, 0).
TEST(QuantizedSgda, ConstantStepMatchesTheIterationByHand) {
  const AffineOperator op = tiny_game();
  const StochasticOracle oracle(op, {NoiseKind::none, 0, 0.5}, 1, 1);
  run_world(1, [&](Communicator& comm) {
    auto codec = make_codec("fp32");
    QuantizedSgda solver(comm, oracle, *codec, sgda(StepRule::constant, 0.25));
    const StepReport first = solver.step();
    EXPECT_EQ(first.gamma, 0.25);
    EXPECT_EQ(first.oracle_calls, 1u);
    EXPECT_EQ(first.vector_exchanges, 1u);
    EXPECT_EQ(solver.x()[0], -0.5);
    EXPECT_EQ(solver.x()[1], 0.0);
    solver.step();
    EXPECT_EQ(solver.x()[0], -15.0 / 16.0);
    EXPECT_EQ(solver.x()[1], -0.125);
    EXPECT_EQ(solver.average(), (std::vector<double>{-0.25, 0.0}));
    EXPECT_EQ(solver.gamma(), 0.25);
  });
}

// The adaptive rule on K = 2 ranks (no noise: both send A(X_t)), scale
// γ·K = ½: γ_1 = ½, X_2 = −½·(2, 0) = (−1, 0); Σ_k ‖V̂_k‖² = 2·4 = 8, so
// γ_2 = ½/√9 = 1/6; A(X_2) = (3/2, 1), X_3 = (−1 − 1/4, −1/6).
TEST(QuantizedSgda, AdaptiveStepMatchesTheIterationByHandOnTwoRanks) {
  const AffineOperator op = tiny_game();
  const StochasticOracle oracle(op, {NoiseKind::none, 0, 0.5}, 1, 1);
  run_world(2, [&](Communicator& comm) {
    auto codec = make_codec("fp32");
    QuantizedSgda solver(comm, oracle, *codec, sgda(StepRule::adaptive, 0.25));
    const StepReport first = solver.step();
    EXPECT_EQ(first.gamma, 0.5);
    EXPECT_EQ(first.squared_difference, 8.0);
    EXPECT_EQ(solver.x()[0], -1.0);
    EXPECT_EQ(solver.gamma(), 0.5 / std::sqrt(9.0));
    solver.step();
    EXPECT_EQ(solver.x()[0], -1.0 - (0.5 / std::sqrt(9.0)) * 1.5);
    EXPECT_EQ(solver.x()[1], -(0.5 / std::sqrt(9.0)) * 1.0);
    EXPECT_EQ(solver.gamma(), 0.5 / std::sqrt(1.0 + 8.0 + 2.0 * (1.5 * 1.5 + 1.0)));
  });
}

// Q-GenX's quantizer and absolute noise on 3 ranks: the replicas agree (the
// check passes), and the iterates are a function of the seed.
TEST(QuantizedSgda, ReplicasAgreeAndRunsAreAFunctionOfTheSeed) {
  const Problem p = quadratic(4, 0, 2, 3);
  const auto run = [&](std::uint64_t seed) {
    const StochasticOracle oracle(p.op, {NoiseKind::absolute, 1.0, 0.5}, seed, p.split);
    std::vector<double> x;
    run_world(3, [&](Communicator& comm) {
      auto codec = make_codec("qgenx:bits=4,levels=uniform,norm=inf,bucket=0,coding=fixed",
                              {.seed = seed, .bucket = 0});
      QuantizedSgda solver(comm, oracle, *codec, sgda(StepRule::adaptive, 0.1));
      for (int t = 0; t < 50; ++t) solver.step();
      solver.check_replicas();
      if (comm.rank() == 0) x.assign(solver.x().begin(), solver.x().end());
    });
    return x;
  };
  const auto a = run(11);
  EXPECT_EQ(a, run(11));
  EXPECT_NE(a, run(12));
}

TEST(QuantizedSgda, RefusesAStepThatIsNotPositive) {
  const AffineOperator op = tiny_game();
  const StochasticOracle oracle(op, {NoiseKind::none, 0, 0.5}, 1, 1);
  for (double step : {0.0, -1.0, static_cast<double>(NAN)}) {
    run_world(1, [&](Communicator& comm) {
      auto codec = make_codec("fp32");
      try {
        QuantizedSgda solver(comm, oracle, *codec, sgda(StepRule::constant, step));
        ADD_FAILURE() << "accepted step " << step;
      } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("the step γ must be positive"), std::string::npos)
            << e.what();
      }
    });
  }
}

}  // namespace
}  // namespace qccl::vi
