// Q-GenX §5 / Appendix H on CPUs: WGAN-GP on Fashion-MNIST, trained
// data-parallel with ExtraAdam and every oracle's gradients exchanged
// through a codec, scored by a Fréchet distance on features of a classifier
// qccl trains itself (feature_classifier.h). The libtorch-free face of it,
// for the command line (`qccl experiment qgenx-gan`) and the tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"
#include "qccl/training/train_config.h"

namespace qccl::engines {

struct GanConfig {
  CodecSpec codec;  // fp32 unless given
  Algorithm algorithm = Algorithm::ring;
  // extra-gradient with adam: ExtraAdam (the paper's); gradient: simultaneous
  // steps. sgd (no momentum) makes plain (extra-)gradient steps.
  std::string step_algorithm = "extra-gradient";
  std::string optimizer = "adam";
  std::size_t steps = 300;
  std::size_t batch = 32;  // real images per rank per oracle
  std::uint64_t seed = 1;
  double lr = 2e-4, beta1 = 0.5, beta2 = 0.9, eps = 1e-8;  // both players
  double gp_weight = 10;  // λ
  std::int64_t latent = 32, width = 16;  // wgan_gp.h's GanShape
  std::string data_dir;  // empty: Debian's Fashion-MNIST
  int threads = 1;       // libtorch and BLAS threads per rank
  bool overlap_updates = true;
  // Fréchet distance over this many generated images against the test set
  // (0: none), with the classifier of these settings, cached in cache_dir.
  std::size_t fd_samples = 5000;
  int classifier_epochs = 2;
  std::size_t classifier_max_steps = 0;  // per epoch; 0: the whole training set
  std::uint64_t classifier_seed = 1;
  std::string cache_dir;
  std::size_t grid_samples = 64;  // generated images kept for the sample grid
  // Checkpoints (checkpoint.h's files and manifest) every checkpoint_every
  // steps (0: only at the end) and when stopping; resume continues the run
  // in checkpoint_dir exactly; stop_after ends this invocation after that
  // many steps (0: none). Empty checkpoint_dir: no checkpoints.
  std::string checkpoint_dir;
  std::size_t checkpoint_every = 0;
  bool resume = false;
  bool force = false;  // replace a checkpoint a fresh run finds
  std::size_t stop_after = 0;
  bool return_parameters = false;
  // Rank 0's progress lines (every progress_every steps, and the phases).
  std::function<void(const std::string&)> progress;
  std::size_t progress_every = 50;
};

struct GanResult {
  std::string codec, step_algorithm;
  int ranks = 0;
  std::size_t steps = 0, oracles_per_step = 0;
  std::size_t first_step = 0;  // where this invocation began (> 0 when resumed)
  std::size_t generator_parameters = 0, critic_parameters = 0, buckets = 0;
  double payload_bytes_per_oracle = 0;  // one rank's encoded exchange
  double sent_bytes_per_step = 0;       // rank's data bytes per step, as its transport counted
  // Medians over steps, seconds, of the training thread's data, compute,
  // waiting and optimizer parts, and of the exchange's encode, communicate
  // and decode (both oracles of a step summed), and of the whole step.
  StepSplit split;
  double step_seconds = 0;
  double wall_seconds = 0;  // the training steps
  // Mean over ranks and over the last tenth of the steps.
  double critic_loss = 0, generator_loss = 0;
  double frechet = std::numeric_limits<double>::quiet_NaN();
  double classifier_accuracy = std::numeric_limits<double>::quiet_NaN();
  // The same distance for fd_samples training images against the test set:
  // what a perfect generator would score with this many samples.
  double reference_frechet = std::numeric_limits<double>::quiet_NaN();
  std::vector<float> samples;  // grid_samples images of 28×28, pixels in [0, 1]
  std::uint64_t parameters_checksum = 0;  // the same on every rank (checked)
  std::vector<float> final_parameters;     // with return_parameters
};

// Trains on every rank of `comm` (same settings everywhere, else a
// MismatchError on every rank before any step), checks that the replicas
// agree at the end, then scores the generator. Every rank gets the result.
GanResult train_gan(Communicator& comm, const GanConfig& config);

}  // namespace qccl::engines
