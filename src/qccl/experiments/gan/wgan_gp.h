// WGAN-GP (Gulrajani et al. 2017) for 28×28 grayscale images, the game
// Q-GenX §5 and Appendix H train: a small DCGAN-like generator and a critic
// with LayerNorm in place of BatchNorm (Appendix H: BatchNorm is hard to
// distribute and interacts badly with the gradient penalty), sized for CPUs.
//
// As a variational inequality (Q-GenX §2) the game's operator is one vector,
// F(θ, φ) = (∇_θ L_G, ∇_φ L_D), with
//   L_D = E[D(G(z))] − E[D(x)] + λ·E[(‖∇_x̂ D(x̂)‖₂ − 1)²],
//         x̂ = α·x + (1 − α)·G(z), α ~ U(0, 1)  (the critic),
//   L_G = −E[D(G(z))]                          (the generator).
// game_loss() builds L_D + L_G so that one backward gives each player its
// own gradient and nothing else: the critic's terms see the samples
// detached, and the generator's term runs the critic with its parameters
// frozen. One backward, one exchange per oracle.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>

namespace qccl::engines {

struct GanShape {
  std::int64_t latent = 32;  // z ~ N(0, I) of this dimension
  std::int64_t width = 16;   // channels of the first convolution; the others are multiples
};

// z → linear → 2w×7×7 → ReLU → transposed conv 4×4/2 → w×14×14 → ReLU →
// transposed conv 4×4/2 → 1×28×28 → tanh: images in [−1, 1].
struct GeneratorNet : torch::nn::Module {
  explicit GeneratorNet(const GanShape& shape);
  torch::Tensor forward(const torch::Tensor& z);
  GanShape shape;
  torch::nn::Linear project{nullptr};
  torch::nn::ConvTranspose2d up1{nullptr}, up2{nullptr};
};

// 1×28×28 → conv 4×4/2 → w×14×14 → LeakyReLU(0.2) → conv 4×4/2 → 2w×7×7 →
// LayerNorm over (2w, 7, 7) → LeakyReLU(0.2) → linear → one score per image.
struct CriticNet : torch::nn::Module {
  explicit CriticNet(const GanShape& shape);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Linear score{nullptr};
};

// Both players in one module, so that the engine, the optimizer and the
// checkpoints see one set of named parameters ("generator.*", "critic.*").
struct GanNet : torch::nn::Module {
  explicit GanNet(const GanShape& shape);
  // PyTorch's default bounds from counter-based numbers of `seed`
  // (tasks.h's initialize_module); LayerNorm as the identity.
  void initialize(std::uint64_t seed);
  std::shared_ptr<GeneratorNet> generator;
  std::shared_ptr<CriticNet> critic;
};

// E[(‖∇_x̂ D(x̂)‖₂ − 1)²] over the batch x̂ ([N, ...]), built with
// create_graph so that it can be differentiated again with respect to the
// critic's parameters. The critic is any function of a batch returning one
// score per sample.
torch::Tensor gradient_penalty(const std::function<torch::Tensor(const torch::Tensor&)>& critic,
                               const torch::Tensor& interpolates);

// One oracle's inputs: real images in [−1, 1] ([N, 1, 28, 28]), the noise
// ([N, latent]) and the interpolation weights ([N]).
struct GanBatch {
  torch::Tensor real, noise, alpha;
};

struct GameLosses {
  torch::Tensor total;  // L_D + L_G, to back-propagate once
  double critic = 0, generator = 0;  // their values
};

// L_D + L_G as above, each player's gradient flowing only to its own
// parameters.
GameLosses game_loss(GanNet& net, const GanBatch& batch, double gp_weight);

}  // namespace qccl::engines
