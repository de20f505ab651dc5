#include "qccl/tools/gan_command.h"

#include <iostream>

#include "qccl/common/errors.h"
#include "qccl/tools/exit_codes.h"
#include "qccl/tools/ranks.h"

namespace qccl::tools {

CLI::App* add_gan_experiment(CLI::App& experiment, GanCommand& command) {
  auto* sub = experiment.add_subcommand(
      "qgenx-gan",
      "Q-GenX §5: WGAN-GP on Fashion-MNIST with ExtraAdam, data-parallel, gradients exchanged "
      "through each codec; Fréchet distance on features of a classifier qccl trains (not FID)");
  auto& g = command.config.gan;
  sub->add_option("--codecs", command.codecs,
                  "codec specs, space-separated or repeated (default: fp32 "
                  "qgenx:bits=8,levels=uniform,norm=inf,bucket=1024,coding=fixed and the same "
                  "with bits=4)");
  sub->add_option("--steps", g.steps, "ExtraAdam steps per codec (default 300)");
  sub->add_option("--batch", g.batch, "real images per rank per oracle (default 32)");
  sub->add_option("--seed", g.seed, "seed of the initial networks, data order and noise (default 1)");
  sub->add_option("--step-algorithm", g.step_algorithm,
                  "extra-gradient (ExtraAdam, default) or gradient (simultaneous Adam)");
  sub->add_option("--optimizer", g.optimizer,
                  "adam (default: with extra-gradient, ExtraAdam) or sgd (plain steps)");
  sub->add_option("--lr", g.lr, "step size of both players (default 2e-4)");
  sub->add_option("--beta1", g.beta1, "Adam beta1 (default 0.5)");
  sub->add_option("--beta2", g.beta2, "Adam beta2 (default 0.9)");
  sub->add_option("--gp-weight", g.gp_weight, "gradient penalty weight lambda (default 10)");
  sub->add_option("--latent", g.latent, "generator noise dimension (default 32)");
  sub->add_option("--width", g.width, "channels of the first convolution (default 16)");
  sub->add_option("--fd-samples", g.fd_samples,
                  "generated images scored against the 10000 test images (default 5000; 0: none)");
  sub->add_option("--classifier-epochs", g.classifier_epochs,
                  "epochs of the Fréchet classifier (the cnn, SGD lr 0.05, batch 64; default 2)");
  sub->add_option("--classifier-steps", g.classifier_max_steps,
                  "at most this many steps per classifier epoch (default 0: the whole training set)");
  sub->add_option("--classifier-seed", g.classifier_seed, "seed of the Fréchet classifier (default 1)");
  sub->add_option("--cache-dir", g.cache_dir,
                  "where the trained classifier is kept (default OUTPUT/cache; none without --output)");
  sub->add_option("--output", command.config.output,
                  "directory for qgenx-gan.{csv,json} and a sample grid per codec (PNG)");
  sub->add_option("--checkpoint-dir", g.checkpoint_dir,
                  "checkpoints of each codec's run in DIR/CODEC (default: none)");
  sub->add_option("--checkpoint-every", g.checkpoint_every,
                  "steps between checkpoints (default 0: only at the end and when stopping)");
  sub->add_flag("--resume", g.resume, "continue each codec's run from its latest checkpoint");
  sub->add_option("--stop-after", g.stop_after, "end each codec's run after this many steps, with a checkpoint");
  sub->add_flag("--force", g.force, "replace checkpoints a fresh run finds");
  sub->add_option("--data-dir", g.data_dir, "Fashion-MNIST directory (default Debian's)");
  sub->add_option("--threads", g.threads, "libtorch threads per rank (default 1)");
  sub->add_option("--progress-every", g.progress_every, "steps between progress lines (default 50)");
  add_launch_options(*sub, command.launch, {.quiet = "no progress lines"});
  return sub;
}

int run_gan_command(GanCommand& command, int argc, char** argv) {
  try {
    if (!command.codecs.empty()) command.config.codecs = command.codecs;
    command.config.gan.algorithm = command.launch.parsed_algorithm();
    if (command.config.gan.algorithm == Algorithm::native) {
      throw InvalidArgument("--algo must be ring or halving-doubling");
    }
    command.launch.check();
    if (command.config.gan.threads <= 0) throw InvalidArgument("--threads must be positive");
  } catch (const InvalidArgument& e) {
    std::cerr << "qccl: " << e.what() << "\n";
    return kExitUsage;
  }
  if (!command.launch.quiet) {
    command.config.gan.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  }
  return run_on_ranks(command.launch, argc, argv,
                      [&](Communicator& comm) {
                        const auto report = run_gan_experiment(comm, command.config);
                        if (comm.rank() == 0) print_gan_report(std::cout, report);
                      });
}

}  // namespace qccl::tools
