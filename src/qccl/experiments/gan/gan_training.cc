// The GAN experiment's training loop (gan_training.h).
//
// Sharding, as the trainer's: oracle o (step s's k-th oracle is o = s·m + k,
// m oracles per step) takes the n·B training images at [p·n·B, (p+1)·n·B)
// of the permutation of epoch e = o / E (E = ⌊60000 / (n·B)⌋, p = o mod E),
// rank r the B at offset r·B; each oracle of a step gets fresh images, as a
// stochastic extra-gradient method samples one at X_t and another at
// X_{t+1/2}. The noise z and the interpolation weights α of image j of
// the oracle's n·B are counter-based draws keyed by (seed, o, j). So n ranks
// with batch B compute exactly the oracles of one rank with batch n·B.
#include "qccl/experiments/gan/gan_training.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numbers>
#include <sstream>

#include "qccl/collectives/collective_call.h"
#include "qccl/common/checksum.h"
#include "qccl/common/counter_rng.h"
#include "qccl/common/duration.h"
#include "qccl/common/errors.h"
#include "qccl/data/epoch_order.h"
#include "qccl/data/image_set.h"
#include "qccl/engines/blas_threads.h"
#include "qccl/training/checkpoint.h"
#include "qccl/training/checkpoint_manifest.h"
#include "qccl/engines/data_parallel.h"
#include "qccl/experiments/gan/feature_classifier.h"
#include "qccl/engines/optimizers.h"
#include "qccl/training/optimizer_choice.h"
#include "qccl/engines/rank_sum.h"
#include "qccl/engines/replica_check.h"
#include "qccl/engines/step_algorithm.h"
#include "qccl/experiments/gan/wgan_gp.h"

namespace qccl::engines {
namespace {

// What each counter-based draw is for (the `bucket` coordinate of its key).
enum Draw : std::uint64_t { kNoise = 1, kAlpha = 2, kScoredNoise = 3, kGridNoise = 4 };

// [rows, cols] standard normal numbers: Box–Muller on two 53-bit uniforms
// of counters 2c and 2c+1, c = (first_row + i)·cols + j.
torch::Tensor normal_draws(const CounterRng& rng, std::size_t first_row, std::size_t rows,
                           std::size_t cols) {
  auto out = torch::empty({static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)});
  float* x = out.data_ptr<float>();
  const auto uniform = [&](std::uint64_t c) {
    return static_cast<double>(rng.bits64(c) >> 11) * 0x1p-53;
  };
  for (std::size_t i = 0; i < rows * cols; ++i) {
    const std::uint64_t c = first_row * cols + i;
    const double u1 = 1.0 - uniform(2 * c), u2 = uniform(2 * c + 1);  // u1 in (0, 1]
    x[i] = static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2));
  }
  return out;
}

std::uint64_t parameters_checksum(torch::nn::Module& module) {
  std::uint64_t h = kChecksumSeed;
  for (const auto& p : module.parameters()) {
    const auto flat = p.detach().contiguous();
    const auto* data = static_cast<const std::byte*>(flat.data_ptr());
    h = checksum64(std::span(data, static_cast<std::size_t>(flat.nbytes())), h);
  }
  return h;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

// Settings every rank must share, compared before any step.
void check_settings_agree(Communicator& comm, const GanConfig& c) {
  std::ostringstream optimizer, shape;
  optimizer << c.step_algorithm << " " << c.optimizer << " lr=" << c.lr << " betas=" << c.beta1 << "," << c.beta2
            << " eps=" << c.eps << " gp=" << c.gp_weight;
  shape << "latent " << c.latent << ", width " << c.width << ", batch " << c.batch << ", "
        << c.steps << " steps, seed " << c.seed << ", Fréchet " << c.fd_samples
        << " samples, classifier " << c.classifier_epochs << " epochs (at most "
        << c.classifier_max_steps << " steps each) seed " << c.classifier_seed;
  Fingerprint fingerprint("gan settings");
  fingerprint.add_text("codec", c.codec.text())
      .add_text("optimizer", optimizer.str())
      .add_text("shape and schedule", shape.str());
  run_collective(comm, fingerprint, comm.timeout(std::nullopt), [](int) {});
}

// The run as the trainer's settings, for the checkpoint manifest: what a
// resume must repeat (checkpoint_manifest.h's resume_settings).
TrainConfig as_train_config(const GanConfig& c) {
  std::ostringstream model;
  model << "wgan-gp (latent " << c.latent << ", width " << c.width << ", gradient penalty "
        << c.gp_weight << ", " << c.step_algorithm << ")";
  TrainConfig t;
  t.model = model.str();
  t.data = "fashion-mnist";
  t.codec = c.codec;
  t.algorithm = c.algorithm;
  t.optimizer = c.optimizer;
  t.momentum = 0;
  t.lr = c.lr;
  t.beta1 = c.beta1;
  t.beta2 = c.beta2;
  t.eps = c.eps;
  t.batch = c.batch;
  t.max_steps_per_epoch = c.steps;
  t.seed = c.seed;
  return t;
}

class GanRun {
 public:
  GanRun(Communicator& comm, const GanConfig& config);
  GanResult run();

 private:
  // Oracle o's batch for this rank; the seconds it took go to data_seconds_.
  GanBatch batch(std::uint64_t oracle);
  void step(std::size_t s);
  void score(GanResult& result);
  // Fresh run: refuses to replace a checkpoint unless forced. Resumed run:
  // the manifest's settings must be this run's; the state is restored.
  void start_or_resume();
  void save(std::size_t steps_done);
  torch::Tensor generate(Draw draw, std::size_t first, std::size_t n);
  // Training images [first, first + n) in file order, pixels in [0, 1].
  torch::Tensor training_images(std::size_t first, std::size_t n) const;
  void report(const std::string& line) {
    if (comm_.rank() == 0 && config_.progress) config_.progress(line);
  }

  Communicator& comm_;
  const GanConfig& config_;
  data::ImageSet train_;
  GanNet net_;
  std::unique_ptr<DataParallelEngine> engine_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<StepAlgorithm> algorithm_;
  std::size_t oracles_per_epoch_ = 0;
  std::uint64_t order_epoch_ = ~0ULL;
  std::vector<std::uint32_t> order_;
  double data_seconds_ = 0, critic_loss_ = 0, generator_loss_ = 0;
  std::vector<double> critic_losses_, generator_losses_;
  std::vector<StepSplit> splits_;
  std::vector<double> step_seconds_;
  double sent_ = 0, wall_ = 0;
  TrainConfig train_config_;
  std::size_t first_step_ = 0;
};

GanRun::GanRun(Communicator& comm, const GanConfig& config)
    : comm_(comm),
      config_(config),
      train_(data::read_fashion_mnist(
          config.data_dir.empty() ? data::kFashionMnistDirectory : config.data_dir,
          data::Split::train)),
      net_(GanShape{config.latent, config.width}) {
  if (config.batch == 0 || config.steps == 0 || config.latent <= 0 || config.width <= 0) {
    throw InvalidArgument("qgenx-gan: --batch, --steps, the latent size and the width must be positive");
  }
  if (train_.rows != 28 || train_.cols != 28) {
    throw InvalidArgument("qgenx-gan: the networks need 28×28 images");
  }
  algorithm_ = make_step_algorithm(config.step_algorithm);
  check_settings_agree(comm, config);
  oracles_per_epoch_ = train_.size() / (static_cast<std::size_t>(comm.size()) * config.batch);
  if (oracles_per_epoch_ == 0) throw InvalidArgument("qgenx-gan: --batch is larger than the data allows");
  net_.initialize(config.seed);
  std::vector<NamedTensor> named;
  for (const auto& item : net_.named_parameters()) named.emplace_back(item.key(), item.value());
  EngineOptions options;
  options.codec = config.codec;
  options.seed = config.seed;
  options.collective.algorithm = config.algorithm;
  options.timeout = comm.options().timeout;
  engine_ = std::make_unique<DataParallelEngine>(comm, named, options);
  if (config.optimizer != "adam" && config.optimizer != "sgd") {
    throw InvalidArgument("qgenx-gan: unknown optimizer '" + config.optimizer + "'; valid: adam, sgd");
  }
  train_config_ = as_train_config(config);
  optimizer_ = make_optimizer(train_config_, engine_->optimizer_parameters());
  engine_->broadcast_from_root();
  start_or_resume();
}

void GanRun::start_or_resume() {
  const auto& dir = config_.checkpoint_dir;
  if (dir.empty()) {
    if (config_.resume) throw InvalidArgument("qgenx-gan: --resume needs --checkpoint-dir");
    return;
  }
  if (!config_.resume) {
    if (!config_.force) check_fresh_start(dir);
    if (comm_.rank() == 0) std::filesystem::create_directories(dir);
    return;
  }
  const auto manifest = read_manifest(dir);
  check_resume_settings(manifest, resume_settings(train_config_, comm_.size()), dir);
  const auto at = load_checkpoint(comm_, dir, manifest, net_, *optimizer_, *engine_);
  first_step_ = static_cast<std::size_t>(at.global_step);
  engine_->set_steps_begun(first_step_ * static_cast<std::size_t>(algorithm_->oracles_per_step()));
  verify_replicas(comm_, parameters_checksum(net_), at.global_step, "after resuming");
}

// Between steps ExtraAdam keeps nothing besides Adam's state (x_t is saved
// and restored inside a step), and the data order and the noise are pure
// functions of (seed, oracle), so the position is the step count alone.
void GanRun::save(std::size_t steps_done) {
  Position at;
  at.global_step = static_cast<std::int64_t>(steps_done);
  at.step_in_epoch = at.global_step;
  verify_replicas(comm_, parameters_checksum(net_), at.global_step, "at a checkpoint");
  save_checkpoint(comm_, config_.checkpoint_dir, "frechet", net_, *optimizer_, *engine_, at,
                  train_config_);
}

GanBatch GanRun::batch(std::uint64_t oracle) {
  const auto start = Clock::now();
  const std::size_t n = static_cast<std::size_t>(comm_.size()), b = config_.batch;
  const std::uint64_t epoch = oracle / oracles_per_epoch_;
  if (epoch != order_epoch_) {
    order_ = data::epoch_permutation(train_.size(), config_.seed, epoch);
    order_epoch_ = epoch;
  }
  const std::size_t first = static_cast<std::size_t>(oracle % oracles_per_epoch_) * n * b +
                            static_cast<std::size_t>(comm_.rank()) * b;
  auto real = torch::empty({static_cast<std::int64_t>(b), 1, 28, 28});
  float* x = real.data_ptr<float>();
  for (std::size_t i = 0; i < b; ++i) {
    const std::uint8_t* image = train_.pixels.data() + std::size_t{order_[first + i]} * 784;
    for (std::size_t p = 0; p < 784; ++p) x[i * 784 + p] = static_cast<float>(image[p]) / 127.5f - 1.0f;
  }
  const std::size_t j = static_cast<std::size_t>(comm_.rank()) * b;  // first image's index in the oracle
  auto noise = normal_draws(CounterRng(config_.seed, oracle, kNoise, 0, RngStream::data), j, b,
                            static_cast<std::size_t>(config_.latent));
  auto alpha = torch::empty({static_cast<std::int64_t>(b)});
  const CounterRng alpha_rng(config_.seed, oracle, kAlpha, 0, RngStream::data);
  for (std::size_t i = 0; i < b; ++i) alpha.data_ptr<float>()[i] = alpha_rng.uniform(j + i);
  data_seconds_ += seconds_since(start);
  return {real, noise, alpha};
}

void GanRun::step(std::size_t s) {
  const auto start = Clock::now();
  const auto sent_before = engine_->bytes_sent();
  const auto m = static_cast<std::uint64_t>(algorithm_->oracles_per_step());
  data_seconds_ = 0;
  StepContext context{*engine_, *optimizer_, nullptr, config_.lr,
                      s + 1 < config_.steps ? config_.lr : 0.0, config_.overlap_updates};
  context.loss = [&] {
    const auto losses = game_loss(net_, batch(s * m + static_cast<std::uint64_t>(context.oracle)),
                                  config_.gp_weight);
    if (context.oracle == 0) {
      critic_loss_ = losses.critic;
      generator_loss_ = losses.generator;
    }
    return losses.total;
  };
  StepOutcome outcome;
  algorithm_->step(context, outcome);
  StepSplit split;
  split.data = data_seconds_;
  split.compute = outcome.oracle.compute - data_seconds_;
  split.waiting = outcome.oracle.waiting;
  split.optimizer = outcome.optimizer;
  split.encode = outcome.oracle.encode;
  split.communicate = outcome.oracle.communicate;
  split.decode = outcome.oracle.decode;
  splits_.push_back(split);
  critic_losses_.push_back(critic_loss_);
  generator_losses_.push_back(generator_loss_);
  sent_ += static_cast<double>(engine_->bytes_sent() - sent_before);
  step_seconds_.push_back(seconds_since(start));
  if (config_.progress_every > 0 && ((s + 1) % config_.progress_every == 0 || s + 1 == config_.steps)) {
    std::ostringstream line;
    line.precision(4);
    line << config_.codec.text() << ": step " << s + 1 << "/" << config_.steps << ", critic loss "
         << critic_loss_ << ", generator loss " << generator_loss_ << ", "
         << step_seconds_.back() * 1e3 << " ms/step";
    report(line.str());
  }
}

torch::Tensor GanRun::generate(Draw draw, std::size_t first, std::size_t n) {
  torch::NoGradGuard no_grad;
  const auto z = normal_draws(CounterRng(config_.seed, 0, draw, 0, RngStream::data), first, n,
                              static_cast<std::size_t>(config_.latent));
  return (net_.generator->forward(z) + 1) / 2;  // pixels in [0, 1]
}

torch::Tensor GanRun::training_images(std::size_t first, std::size_t n) const {
  auto images = torch::empty({static_cast<std::int64_t>(n), 1, 28, 28});
  float* x = images.data_ptr<float>();
  const std::uint8_t* from = train_.pixels.data() + first * 784;
  for (std::size_t i = 0; i < n * 784; ++i) x[i] = static_cast<float>(from[i]) / 255.0f;
  return images;
}

// Q-GenX §5 measures FID; here the Fréchet distance on the features of
// qccl's own Fashion-MNIST classifier (feature_classifier.h): generated
// images of fixed noise against the test set.
void GanRun::score(GanResult& result) {
  const auto grid = generate(kGridNoise, 0, config_.grid_samples).contiguous();
  result.samples.assign(grid.data_ptr<float>(), grid.data_ptr<float>() + grid.numel());
  if (config_.fd_samples == 0) return;
  ClassifierSettings settings;
  settings.epochs = config_.classifier_epochs;
  settings.max_steps_per_epoch = config_.classifier_max_steps;
  settings.seed = config_.classifier_seed;
  settings.data_dir = config_.data_dir;
  settings.threads = config_.threads;
  auto classifier = FeatureClassifier::load_or_train(
      comm_, settings, config_.cache_dir, [&](const std::string& line) { report(line); });
  const auto real = classifier->test_statistics(comm_);
  const auto fake = feature_statistics(
      comm_, *classifier, config_.fd_samples,
      [&](std::size_t first, std::size_t n) { return generate(kScoredNoise, first, n); },
      "Fréchet generated features");
  result.frechet = frechet_distance(real, fake);
  result.classifier_accuracy = classifier->test_accuracy();
  const auto training = feature_statistics(
      comm_, *classifier, std::min(config_.fd_samples, train_.size()),
      [&](std::size_t first, std::size_t n) { return training_images(first, n); },
      "Fréchet training features");
  result.reference_frechet = frechet_distance(real, training);
}

GanResult GanRun::run() {
  const auto start = Clock::now();
  std::size_t end = config_.steps;
  if (config_.stop_after > 0) end = std::min(end, first_step_ + config_.stop_after);
  for (std::size_t s = first_step_; s < end; ++s) {
    step(s);
    if (!config_.checkpoint_dir.empty() && config_.checkpoint_every > 0 && s + 1 < end &&
        (s + 1) % config_.checkpoint_every == 0) {
      save(s + 1);
    }
  }
  wall_ = seconds_since(start);
  if (!config_.checkpoint_dir.empty() && end > first_step_) save(end);
  GanResult r;
  r.codec = engine_->codec_spec();
  r.step_algorithm = algorithm_->name();
  r.ranks = comm_.size();
  r.steps = end;
  r.first_step = first_step_;
  r.oracles_per_step = static_cast<std::size_t>(algorithm_->oracles_per_step());
  for (const auto& p : net_.generator->parameters()) r.generator_parameters += static_cast<std::size_t>(p.numel());
  for (const auto& p : net_.critic->parameters()) r.critic_parameters += static_cast<std::size_t>(p.numel());
  r.buckets = engine_->bucket_count();
  r.payload_bytes_per_oracle = engine_->payload_bytes();
  const std::size_t ran = std::max<std::size_t>(splits_.size(), 1);
  r.sent_bytes_per_step = sent_ / static_cast<double>(ran);
  for (double StepSplit::*field : {&StepSplit::data, &StepSplit::compute, &StepSplit::waiting,
                                   &StepSplit::optimizer, &StepSplit::encode,
                                   &StepSplit::communicate, &StepSplit::decode}) {
    std::vector<double> values;
    for (const auto& split : splits_) values.push_back(split.*field);
    r.split.*field = median(values);
  }
  r.step_seconds = median(step_seconds_);
  r.wall_seconds = wall_;
  const std::size_t tail = std::min(std::max<std::size_t>(critic_losses_.size() / 10, 1),
                                    critic_losses_.size());
  std::vector<double> losses{0, 0};
  for (std::size_t s = critic_losses_.size() - tail; s < critic_losses_.size(); ++s) {
    losses[0] += critic_losses_[s];
    losses[1] += generator_losses_[s];
  }
  sum_over_ranks(comm_, losses, "GAN losses");
  const double count = static_cast<double>(std::max<std::size_t>(tail, 1) * static_cast<std::size_t>(comm_.size()));
  r.critic_loss = losses[0] / count;
  r.generator_loss = losses[1] / count;
  r.parameters_checksum = parameters_checksum(net_);
  verify_replicas(comm_, r.parameters_checksum, static_cast<std::int64_t>(end),
                  "at the end of the GAN run");
  if (config_.return_parameters) {
    for (const auto& p : net_.parameters()) {
      const auto flat = p.detach().contiguous().view(-1);
      r.final_parameters.insert(r.final_parameters.end(), flat.data_ptr<float>(),
                                flat.data_ptr<float>() + flat.numel());
    }
  }
  score(r);
  return r;
}

}  // namespace

GanResult train_gan(Communicator& comm, const GanConfig& config) {
  torch::set_num_threads(config.threads);
  set_blas_threads(config.threads);
  GanRun run(comm, config);
  return run.run();
}

}  // namespace qccl::engines
