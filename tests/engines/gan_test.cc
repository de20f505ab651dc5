// The GAN experiment's parts (Q-GenX §5, Appendix H): ExtraAdam as a step
// algorithm, WGAN-GP's gradient penalty, and data-parallel training of both
// players through the engine.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "engines/train_helpers.h"
#include "qccl/common/errors.h"
#include "qccl/engines/data_parallel.h"
#include "qccl/experiments/gan/gan_training.h"
#include "qccl/engines/optimizers.h"
#include "qccl/engines/step_algorithm.h"
#include "qccl/experiments/gan/wgan_gp.h"
#include "support/world.h"

namespace qccl::engines {
namespace {

using test_support::bitwise_equal;

constexpr double kLr = 0.1, kBeta1 = 0.5, kBeta2 = 0.9, kEps = 1e-8;

torch::optim::AdamOptions adam_options() {
  return torch::optim::AdamOptions(kLr).betas({kBeta1, kBeta2}).eps(kEps);
}

// The bilinear game min_x max_y xᵀy as one loss whose gradient is the
// game's operator F(x, y) = (y, −x): each player's term sees the other
// player detached.
torch::Tensor bilinear_loss(const torch::Tensor& x, const torch::Tensor& y) {
  return (x * y.detach()).sum() - (x.detach() * y).sum();
}

// Adam in fp64 as Kingma & Ba write it, for the hand computation.
struct AdamByHand {
  double m = 0, v = 0;
  int t = 0;
  double step(double x, double g) {
    ++t;
    m = kBeta1 * m + (1 - kBeta1) * g;
    v = kBeta2 * v + (1 - kBeta2) * g * g;
    const double m_hat = m / (1 - std::pow(kBeta1, t)), v_hat = v / (1 - std::pow(kBeta2, t));
    return x - kLr * m_hat / (std::sqrt(v_hat) + kEps);
  }
};

// ExtraAdam through the engine and the step algorithm, against (a)
// libtorch's own Adam driven by hand through the same two phases — save,
// step at x_t, step at x_{t+1/2} from the restored x_t — bit for bit, and
// (b) Adam's formulas in fp64, to float precision.
TEST(ExtraAdam, TwoPhaseStepMatchesAdamExtrapolationByHand) {
  const std::vector<float> x0{0.5f, -1.0f}, y0{1.5f, 0.25f};
  std::vector<float> engine_x, engine_y;
  std::vector<int> oracles_seen;
  test::run_world(1, [&](Communicator& comm) {
    auto x = torch::tensor(x0).requires_grad_(true), y = torch::tensor(y0).requires_grad_(true);
    DataParallelEngine engine(comm, {{"x", x}, {"y", y}}, EngineOptions{});
    InPlaceAdam adam(engine.optimizer_parameters(), adam_options());
    auto algorithm = make_step_algorithm("extra-gradient");
    ASSERT_EQ(algorithm->oracles_per_step(), 2);
    for (int s = 0; s < 3; ++s) {
      StepContext context{engine, adam, nullptr, kLr, kLr, true};
      context.loss = [&] {
        oracles_seen.push_back(context.oracle);
        return bilinear_loss(x, y);
      };
      StepOutcome outcome;
      algorithm->step(context, outcome);
    }
    engine_x.assign(x.data_ptr<float>(), x.data_ptr<float>() + 2);
    engine_y.assign(y.data_ptr<float>(), y.data_ptr<float>() + 2);
  });
  EXPECT_EQ(oracles_seen, (std::vector<int>{0, 1, 0, 1, 0, 1}));

  // (a) libtorch's Adam, the phases by hand.
  auto x = torch::tensor(x0).requires_grad_(true), y = torch::tensor(y0).requires_grad_(true);
  torch::optim::Adam reference({x, y}, adam_options());
  const auto set_grads = [&] {
    x.mutable_grad() = y.detach().clone();
    y.mutable_grad() = -x.detach().clone();
  };
  for (int s = 0; s < 3; ++s) {
    const auto saved_x = x.detach().clone(), saved_y = y.detach().clone();
    set_grads();
    reference.step();  // x_{t+1/2}
    set_grads();       // the gradient at x_{t+1/2}
    {
      torch::NoGradGuard no_grad;
      x.copy_(saved_x);
      y.copy_(saved_y);
    }
    reference.step();  // x_{t+1}
  }
  EXPECT_TRUE(bitwise_equal(engine_x, std::vector<float>(x.data_ptr<float>(), x.data_ptr<float>() + 2)));
  EXPECT_TRUE(bitwise_equal(engine_y, std::vector<float>(y.data_ptr<float>(), y.data_ptr<float>() + 2)));

  // (b) fp64 by hand: per coordinate i, the moments of x_i and y_i.
  for (int i = 0; i < 2; ++i) {
    double xi = x0[static_cast<std::size_t>(i)], yi = y0[static_cast<std::size_t>(i)];
    AdamByHand ax, ay;
    for (int s = 0; s < 3; ++s) {
      const double xh = ax.step(xi, yi), yh = ay.step(yi, -xi);
      const double xn = ax.step(xi, yh), yn = ay.step(yi, -xh);
      xi = xn;
      yi = yn;
    }
    EXPECT_NEAR(engine_x[static_cast<std::size_t>(i)], xi, 2e-6) << "x" << i;
    EXPECT_NEAR(engine_y[static_cast<std::size_t>(i)], yi, 2e-6) << "y" << i;
  }
}

// On the bilinear game simultaneous gradient steps spiral out and
// extra-gradient steps spiral in (Gidel et al. 2019, §4): the reason
// Q-GenX builds on extrapolation. With SGD as the geometry.
TEST(ExtraGradient, ConvergesOnTheBilinearGameWhereGradientStepsDiverge) {
  const auto distance_after = [](const char* name) {
    double norm = 0;
    test::run_world(1, [&](Communicator& comm) {
      auto x = torch::tensor({1.0f}).requires_grad_(true), y = torch::tensor({1.0f}).requires_grad_(true);
      DataParallelEngine engine(comm, {{"x", x}, {"y", y}}, EngineOptions{});
      InPlaceSGD sgd(engine.optimizer_parameters(), torch::optim::SGDOptions(0.2));
      auto algorithm = make_step_algorithm(name);
      for (int s = 0; s < 50; ++s) {
        StepContext context{engine, sgd, [&] { return bilinear_loss(x, y); }, 0.2, 0.2, true};
        StepOutcome outcome;
        algorithm->step(context, outcome);
      }
      norm = std::hypot(x.item<double>(), y.item<double>());
    });
    return norm;
  };
  // |eigenvalues| per step: √(1 + η²) for gradient steps, √(1 − η² + η⁴)
  // for extra-gradient; from √2, 50 steps give 3.77 and 0.53.
  EXPECT_GT(distance_after("gradient"), 2.0);
  EXPECT_LT(distance_after("extra-gradient"), 0.7);
}

// A linear critic D(x) = w·x + b has ∇_x D = w everywhere: GP = (‖w‖ − 1)².
TEST(GradientPenalty, LinearCriticHasTheClosedForm) {
  auto w = torch::tensor({0.6, -1.2, 2.0}, torch::kDouble).requires_grad_(true);
  const auto critic = [&](const torch::Tensor& x) { return x.matmul(w) + 0.3; };
  const auto points = torch::randn({5, 3}, torch::kDouble);
  const auto gp = gradient_penalty(critic, points);
  const double expected = std::pow(std::sqrt(0.36 + 1.44 + 4.0) - 1, 2);
  EXPECT_NEAR(gp.item<double>(), expected, 1e-12);
  // Its gradient in w: 2(‖w‖ − 1)·w/‖w‖, through the create_graph path.
  gp.backward();
  const double norm = std::sqrt(5.8);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(w.grad()[i].item<double>(), 2 * (norm - 1) * w[i].item<double>() / norm, 1e-12);
  }
}

// A nonlinear critic: the penalty against central differences of D in its
// input, and its gradient in a critic weight against central differences
// of the penalty itself (the second-order term the critic's update needs).
TEST(GradientPenalty, NonlinearCriticMatchesFiniteDifferences) {
  torch::manual_seed(3);
  auto w1 = torch::randn({4, 6}, torch::kDouble).requires_grad_(true);
  auto w2 = torch::randn({6}, torch::kDouble).requires_grad_(true);
  const auto critic = [&](const torch::Tensor& x) { return torch::tanh(x.matmul(w1)).matmul(w2); };
  const auto points = torch::randn({3, 4}, torch::kDouble);
  const double h = 1e-6;
  double by_differences = 0;
  for (int n = 0; n < 3; ++n) {
    double squared = 0;
    for (int i = 0; i < 4; ++i) {
      auto plus = points[n].clone(), minus = points[n].clone();
      plus[i] += h;
      minus[i] -= h;
      const double d = (critic(plus.unsqueeze(0)).item<double>() - critic(minus.unsqueeze(0)).item<double>()) / (2 * h);
      squared += d * d;
    }
    by_differences += std::pow(std::sqrt(squared) - 1, 2) / 3;
  }
  const auto gp = gradient_penalty(critic, points);
  EXPECT_NEAR(gp.item<double>(), by_differences, 1e-8);

  gp.backward();
  const double analytic = w1.grad()[1][2].item<double>();
  torch::NoGradGuard no_grad;
  const auto penalty_at = [&](double delta) {
    torch::AutoGradMode enable(true);
    auto w = w1.detach().clone();
    w[1][2] += delta;
    w.requires_grad_(true);
    const auto c = [&](const torch::Tensor& x) { return torch::tanh(x.matmul(w)).matmul(w2.detach()); };
    return gradient_penalty(c, points).item<double>();
  };
  EXPECT_NEAR(analytic, (penalty_at(h) - penalty_at(-h)) / (2 * h), 1e-6);
}

// game_loss gives each player its own gradient only: the critic's from
// L_D, the generator's from L_G.
TEST(GameLoss, EachPlayerGetsTheGradientOfItsOwnLoss) {
  torch::manual_seed(5);
  GanNet net(GanShape{4, 2});
  net.initialize(7);
  GanBatch batch{torch::rand({3, 1, 28, 28}) * 2 - 1, torch::randn({3, 4}), torch::rand({3})};
  const auto losses = game_loss(net, batch, 10.0);
  losses.total.backward();
  // The generator's gradient alone, from −D(G(z)).
  GanNet copy(GanShape{4, 2});
  copy.initialize(7);
  (-copy.critic->forward(copy.generator->forward(batch.noise)).mean()).backward();
  for (std::size_t i = 0; i < net.generator->parameters().size(); ++i) {
    EXPECT_TRUE(torch::allclose(net.generator->parameters()[i].grad(),
                                copy.generator->parameters()[i].grad(), 1e-5, 1e-7));
  }
  // The critic's gradient alone, from L_D with the samples detached.
  for (auto& p : copy.parameters()) p.mutable_grad() = torch::Tensor();
  const auto fake = copy.generator->forward(batch.noise).detach();
  const auto a = batch.alpha.view({-1, 1, 1, 1});
  const auto critic_loss = copy.critic->forward(fake).mean() - copy.critic->forward(batch.real).mean() +
                           10.0 * gradient_penalty([&](const torch::Tensor& x) { return copy.critic->forward(x); },
                                                   a * batch.real + (1 - a) * fake);
  critic_loss.backward();
  for (std::size_t i = 0; i < net.critic->parameters().size(); ++i) {
    EXPECT_TRUE(torch::allclose(net.critic->parameters()[i].grad(),
                                copy.critic->parameters()[i].grad(), 1e-5, 1e-7));
  }
  EXPECT_NEAR(losses.critic, critic_loss.item<double>(), 1e-5);
  EXPECT_TRUE(net.critic->parameters()[0].requires_grad());  // unfrozen again
}

GanConfig tiny_gan(const std::string& codec) {
  GanConfig c;
  c.codec = CodecSpec::parse(codec);
  c.steps = 3;
  c.batch = 4;
  c.latent = 8;
  c.width = 4;
  c.lr = 1e-3;
  c.fd_samples = 0;
  c.grid_samples = 4;
  c.return_parameters = true;
  return c;
}

std::vector<GanResult> gan_on(int ranks, const GanConfig& config) {
  std::vector<GanResult> out(static_cast<std::size_t>(ranks));
  test::run_world(ranks, [&](Communicator& comm) {
    out[static_cast<std::size_t>(comm.rank())] = train_gan(comm, config);
  });
  return out;
}

class GanReplicas : public ::testing::TestWithParam<const char*> {};

// Every rank decodes the same bytes, so both players' replicas stay bitwise
// identical, with fp32 and with a quantizing codec, on 1, 2 and 3 ranks.
TEST_P(GanReplicas, BitwiseIdenticalOnEveryRank) {
  for (const int ranks : {1, 2, 3}) {
    const auto results = gan_on(ranks, tiny_gan(GetParam()));
    ASSERT_FALSE(results[0].final_parameters.empty());
    for (const auto& r : results) {
      EXPECT_TRUE(bitwise_equal(r.final_parameters, results[0].final_parameters)) << ranks << " ranks";
      EXPECT_EQ(r.steps, 3u);
      EXPECT_EQ(r.oracles_per_step, 2u);
    }
    EXPECT_TRUE(std::isfinite(results[0].critic_loss));
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, GanReplicas,
                         ::testing::Values("fp32", "qgenx:bits=4,levels=uniform,norm=inf,bucket=1024"),
                         [](const auto& info) { return info.index == 0 ? "fp32" : "qgenx4"; });

// Data-parallel fp32 on 3 ranks with batch 4 computes the oracles of one
// rank with batch 12 (the same images, noise and interpolation weights),
// up to the order of float sums. With extra-gradient SGD steps, so that
// parameters differ by the step size times that rounding; Adam divides
// each gradient by its own magnitude, which lets the rounding of a
// near-zero gradient move its parameter by up to a step.
TEST(GanTraining, Fp32OnThreeRanksMatchesOneRankOnTheConcatenatedBatch) {
  auto config = tiny_gan("fp32");
  config.steps = 2;
  config.optimizer = "sgd";
  config.lr = 0.01;
  const auto three = gan_on(3, config);
  config.batch = 12;
  const auto one = gan_on(1, config);
  const auto& a = three[0].final_parameters;
  const auto& b = one[0].final_parameters;
  ASSERT_EQ(a.size(), b.size());
  double largest = 0;
  for (std::size_t i = 0; i < a.size(); ++i) largest = std::max(largest, std::abs(double{a[i]} - b[i]));
  EXPECT_LT(largest, 1e-5);
}

// A run stopped after 2 steps and resumed from its checkpoint ends with the
// bits of one that ran all 4 (Adam's moments, the codecs' step counters,
// the data order and the noise all carry over); a fresh run refuses the
// checkpoint, and a resume with another batch is refused naming it.
TEST(GanTraining, ResumeFromACheckpointIsExact) {
  auto config = tiny_gan("qgenx:bits=4,levels=uniform,norm=inf,bucket=1024");
  config.steps = 4;
  const auto straight = gan_on(2, config);
  const auto dir = test_support::scratch_dir("checkpoint");
  config.checkpoint_dir = dir.string();
  config.stop_after = 2;
  const auto stopped = gan_on(2, config);
  EXPECT_EQ(stopped[0].steps, 2u);
  EXPECT_FALSE(bitwise_equal(stopped[0].final_parameters, straight[0].final_parameters));
  config.resume = true;
  config.stop_after = 0;
  const auto resumed = gan_on(2, config);
  EXPECT_EQ(resumed[0].first_step, 2u);
  EXPECT_EQ(resumed[0].steps, 4u);
  EXPECT_TRUE(bitwise_equal(resumed[0].final_parameters, straight[0].final_parameters));
  EXPECT_TRUE(bitwise_equal(resumed[1].final_parameters, straight[0].final_parameters));

  config.resume = false;
  EXPECT_NE(test::expect_throw_on_every_rank<InvalidArgument>(
                2, [&](Communicator& comm) { train_gan(comm, config); })
                .find("--resume"),
            std::string::npos);
  config.resume = true;
  config.batch = 5;
  EXPECT_NE(test::expect_throw_on_every_rank<InvalidArgument>(
                2, [&](Communicator& comm) { train_gan(comm, config); })
                .find("batch"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace qccl::engines
