#include "qccl/experiments/gan/gan_experiment.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/checksum.h"
#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "qccl/engines/rank_agreement.h"
#include "qccl/reports/png_image.h"

namespace qccl::tools {
namespace {

namespace fs = std::filesystem;

const char* const kColumns =
    "codec,step_algorithm,ranks,batch_per_rank,steps,frechet_distance,classifier_accuracy,"
    "reference_frechet_distance,"
    "step_ms,data_ms,compute_ms,wait_ms,optim_ms,encode_ms,comm_ms,decode_ms,"
    "payload_bytes_per_oracle,sent_bytes_per_step,critic_loss,generator_loss,wall_s";

void write_row(std::ostream& csv, const engines::GanResult& r, std::size_t batch) {
  const auto ms = [](double s) { return s * 1e3; };
  csv << '"' << r.codec << "\"," << r.step_algorithm << "," << r.ranks << "," << batch << ","
      << r.steps << "," << r.frechet << "," << r.classifier_accuracy << "," << r.reference_frechet
      << "," << ms(r.step_seconds)
      << "," << ms(r.split.data) << "," << ms(r.split.compute) << "," << ms(r.split.waiting) << ","
      << ms(r.split.optimizer) << "," << ms(r.split.encode) << "," << ms(r.split.communicate)
      << "," << ms(r.split.decode) << "," << r.payload_bytes_per_oracle << ","
      << r.sent_bytes_per_step << "," << r.critic_loss << "," << r.generator_loss << ","
      << r.wall_seconds << "\n";
}

nlohmann::json run_json(const engines::GanResult& r) {
  return {{"codec", r.codec},
          {"step_algorithm", r.step_algorithm},
          {"ranks", r.ranks},
          {"steps", r.steps},
          {"oracles_per_step", r.oracles_per_step},
          {"generator_parameters", r.generator_parameters},
          {"critic_parameters", r.critic_parameters},
          {"buckets", r.buckets},
          {"frechet_distance", r.frechet},
          {"classifier_accuracy", r.classifier_accuracy},
          {"reference_frechet_distance", r.reference_frechet},
          {"step_seconds", r.step_seconds},
          {"split_seconds",
           {{"data", r.split.data}, {"compute", r.split.compute}, {"wait", r.split.waiting},
            {"optim", r.split.optimizer}, {"encode", r.split.encode},
            {"comm", r.split.communicate}, {"decode", r.split.decode}}},
          {"payload_bytes_per_oracle", r.payload_bytes_per_oracle},
          {"sent_bytes_per_step", r.sent_bytes_per_step},
          {"critic_loss", r.critic_loss},
          {"generator_loss", r.generator_loss},
          {"wall_seconds", r.wall_seconds},
          {"parameters_checksum", checksum_text(r.parameters_checksum)}};
}

void write_outputs(const GanExperimentConfig& config, GanExperimentReport& report) {
  const std::string base = (fs::path(config.output) / "qgenx-gan").string();
  std::ostringstream csv;
  csv << std::setprecision(10) << kColumns << "\n";
  nlohmann::json json = {{"experiment", "qgenx-gan"},
                         {"fid_note", "Fréchet distance on the penultimate-layer features of a "
                                      "CNN qccl trains on Fashion-MNIST, not on Inception "
                                      "features: not comparable with published FIDs"},
                         {"batch_per_rank", config.gan.batch},
                         {"seed", config.gan.seed},
                         {"lr", config.gan.lr},
                         {"betas", {config.gan.beta1, config.gan.beta2}},
                         {"gp_weight", config.gan.gp_weight},
                         {"latent", config.gan.latent},
                         {"width", config.gan.width},
                         {"fd_samples", config.gan.fd_samples},
                         {"classifier_epochs", config.gan.classifier_epochs}};
  for (const auto& r : report.runs) {
    write_row(csv, r, config.gan.batch);
    auto entry = run_json(r);
    const std::string png = base + "-" + file_part(r.codec) + ".png";
    const std::size_t count = r.samples.size() / 784;
    const auto grid = tile_images(r.samples, count, 28, 28, std::min<std::size_t>(count, 8), 2);
    write_file_atomically(png, encode_png_gray(grid.width, grid.height, grid.pixels));
    entry["samples_png"] = fs::path(png).filename().string();
    json["runs"].push_back(entry);
    report.files.push_back(png);
  }
  write_file_atomically(base + ".csv", csv.str());
  write_file_atomically(base + ".json", json.dump(2) + "\n");
  report.files.push_back(base + ".csv");
  report.files.push_back(base + ".json");
}

// Rank 0 creates the output directory before any training, so that a path
// that cannot be written fails every rank at once, not after the runs.
void prepare_output(Communicator& comm, const std::string& output) {
  std::string failure;
  if (comm.rank() == 0 && !output.empty()) {
    std::error_code error;
    fs::create_directories(output, error);
    if (error || !fs::is_directory(output)) {
      failure = "cannot create the output directory '" + output + "': " + error.message();
    }
  }
  if (const auto failed = engines::failures_of_ranks(comm, "qgenx-gan output", failure);
      !failed.empty()) {
    throw InvalidArgument(failed + "; choose another --output");
  }
}

}  // namespace

std::string file_part(const std::string& spec) {
  std::string out;
  for (const char c : spec) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (keep) out.push_back(c);
    else if (!out.empty() && out.back() != '-') out.push_back('-');
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

GanExperimentReport run_gan_experiment(Communicator& comm, const GanExperimentConfig& config) {
  if (config.codecs.empty()) throw InvalidArgument("--codecs needs at least one codec");
  for (const auto& codec : config.codecs) make_codec(codec);  // refuses a bad spec up front
  prepare_output(comm, config.output);
  GanExperimentReport report;
  for (const auto& codec : config.codecs) {
    engines::GanConfig gan = config.gan;
    gan.codec = CodecSpec::parse(codec);
    if (!gan.checkpoint_dir.empty()) {
      gan.checkpoint_dir = (fs::path(gan.checkpoint_dir) / file_part(codec)).string();
    }
    if (gan.cache_dir.empty() && !config.output.empty()) {
      gan.cache_dir = (fs::path(config.output) / "cache").string();
    }
    report.runs.push_back(engines::train_gan(comm, gan));
    if (comm.rank() == 0 && gan.progress) {
      std::ostringstream line;
      line << std::setprecision(4) << codec << ": Fréchet distance " << report.runs.back().frechet
           << ", " << report.runs.back().step_seconds * 1e3 << " ms/step";
      gan.progress(line.str());
    }
  }
  if (comm.rank() == 0 && !config.output.empty()) write_outputs(config, report);
  return report;
}

void print_gan_report(std::ostream& out, const GanExperimentReport& report) {
  if (report.runs.empty()) return;
  const auto& first = report.runs.front();
  out << "qgenx-gan: WGAN-GP on Fashion-MNIST, " << first.step_algorithm << " (Adam), "
      << first.ranks << " ranks, " << first.steps << " steps, generator "
      << first.generator_parameters << " + critic " << first.critic_parameters << " parameters\n"
      << "Fréchet distance on qccl's own Fashion-MNIST classifier features (test accuracy "
      << std::fixed << std::setprecision(2) << first.classifier_accuracy * 100
      << "%), not Inception's: not an FID; training images against the test set score "
      << first.reference_frechet << "\n\n";
  out << "| codec | Fréchet distance | ms/step | compute | wait | optim | encode | comm | decode "
         "| sent per step |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& r : report.runs) {
    out << "| " << r.codec << " | " << std::setprecision(2) << r.frechet << " | "
        << std::setprecision(1) << r.step_seconds * 1e3 << " | " << r.split.compute * 1e3 << " | "
        << r.split.waiting * 1e3 << " | " << r.split.optimizer * 1e3 << " | "
        << std::setprecision(2) << r.split.encode * 1e3 << " | " << r.split.communicate * 1e3
        << " | " << r.split.decode * 1e3 << " | " << std::setprecision(1)
        << r.sent_bytes_per_step / 1024 << " KiB |\n";
  }
  for (const auto& f : report.files) out << "wrote " << f << "\n";
}

}  // namespace qccl::tools
