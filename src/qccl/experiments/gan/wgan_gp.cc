#include "qccl/experiments/gan/wgan_gp.h"

#include "qccl/models/tasks.h"

namespace qccl::engines {
namespace nn = torch::nn;
namespace F = torch::nn::functional;

GeneratorNet::GeneratorNet(const GanShape& s) : shape(s) {
  project = register_module("project", nn::Linear(s.latent, 2 * s.width * 7 * 7));
  up1 = register_module("up1", nn::ConvTranspose2d(
                                   nn::ConvTranspose2dOptions(2 * s.width, s.width, 4).stride(2).padding(1)));
  up2 = register_module(
      "up2", nn::ConvTranspose2d(nn::ConvTranspose2dOptions(s.width, 1, 4).stride(2).padding(1)));
}

torch::Tensor GeneratorNet::forward(const torch::Tensor& z) {
  auto x = torch::relu(project(z)).view({z.size(0), 2 * shape.width, 7, 7});
  x = torch::relu(up1(x));
  return torch::tanh(up2(x));
}

CriticNet::CriticNet(const GanShape& s) {
  conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, s.width, 4).stride(2).padding(1)));
  conv2 = register_module(
      "conv2", nn::Conv2d(nn::Conv2dOptions(s.width, 2 * s.width, 4).stride(2).padding(1)));
  norm = register_module("norm", nn::LayerNorm(nn::LayerNormOptions({2 * s.width, 7, 7})));
  score = register_module("score", nn::Linear(2 * s.width * 7 * 7, 1));
}

torch::Tensor CriticNet::forward(const torch::Tensor& x) {
  auto h = F::leaky_relu(conv1(x), F::LeakyReLUFuncOptions().negative_slope(0.2));
  h = F::leaky_relu(norm(conv2(h)), F::LeakyReLUFuncOptions().negative_slope(0.2));
  return score(h.flatten(1)).squeeze(1);
}

GanNet::GanNet(const GanShape& shape) {
  generator = register_module("generator", std::make_shared<GeneratorNet>(shape));
  critic = register_module("critic", std::make_shared<CriticNet>(shape));
}

void GanNet::initialize(std::uint64_t seed) {
  initialize_module(*generator, seed);
  initialize_module(*critic, seed + 1);
  torch::NoGradGuard no_grad;
  critic->norm->weight.fill_(1);
  critic->norm->bias.zero_();
}

// Gulrajani et al. 2017, Algorithm 1, line 8: the penalty on the critic's
// input gradient at points between real and generated samples. The input
// gradient is built with create_graph, so backward reaches the critic's
// parameters through it (a second-order term).
torch::Tensor gradient_penalty(const std::function<torch::Tensor(const torch::Tensor&)>& critic,
                               const torch::Tensor& interpolates) {
  auto x = interpolates.detach().requires_grad_(true);
  const auto scores = critic(x);
  const auto grad = torch::autograd::grad({scores.sum()}, {x}, /*grad_outputs=*/{},
                                          /*retain_graph=*/true, /*create_graph=*/true)[0];
  const auto norms = grad.flatten(1).norm(2, 1);
  return (norms - 1).pow(2).mean();
}

// Q-GenX §5 / Appendix H's game (Gulrajani et al. 2017's losses), both
// players' gradients from one backward: the critic's loss sees G(z)
// detached, so it gives the generator nothing; the generator's loss runs the
// critic with its parameters frozen, so it gives the critic nothing.
GameLosses game_loss(GanNet& net, const GanBatch& batch, double gp_weight) {
  auto& critic = *net.critic;
  const auto fake = net.generator->forward(batch.noise);
  const auto fake_detached = fake.detach();
  const auto alpha = batch.alpha.view({-1, 1, 1, 1});
  const auto interpolates = alpha * batch.real + (1 - alpha) * fake_detached;
  const auto critic_loss =
      critic.forward(fake_detached).mean() - critic.forward(batch.real).mean() +
      gp_weight * gradient_penalty([&](const torch::Tensor& x) { return critic.forward(x); },
                                   interpolates);
  for (auto& p : critic.parameters()) p.requires_grad_(false);
  torch::Tensor generator_loss;
  try {
    generator_loss = -critic.forward(fake).mean();
  } catch (...) {
    for (auto& p : critic.parameters()) p.requires_grad_(true);
    throw;
  }
  for (auto& p : critic.parameters()) p.requires_grad_(true);
  return {critic_loss + generator_loss, critic_loss.item<double>(), generator_loss.item<double>()};
}

}  // namespace qccl::engines
