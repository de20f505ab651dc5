#include "qccl/experiments/gan/feature_classifier.h"

#include <cstring>
#include <filesystem>
#include <sstream>

#include "qccl/collectives/broadcast.h"
#include "qccl/common/checksum.h"
#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "qccl/engines/rank_agreement.h"
#include "qccl/engines/rank_sum.h"
#include "qccl/training/train_config.h"
#include "qccl/transport/local_transport.h"

namespace qccl::engines {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'Q', 'C', 'C', 'L', 'F', 'D', 'C', '1'};

TrainConfig classifier_config(const ClassifierSettings& s) {
  TrainConfig c;
  c.model = "cnn";
  c.data = "fashion-mnist";
  c.data_dir = s.data_dir;
  c.codec = CodecSpec();  // fp32
  c.optimizer = "sgd";
  c.lr = s.lr;
  c.momentum = 0.9;
  c.epochs = s.epochs;
  c.max_steps_per_epoch = s.max_steps_per_epoch;
  c.batch = s.batch;
  c.seed = s.seed;
  c.threads = s.threads;
  c.progress = false;
  c.return_parameters = true;
  return c;
}

std::size_t parameter_count(Task& task) {
  std::size_t n = 0;
  for (const auto& p : task.model().parameters()) n += static_cast<std::size_t>(p.numel());
  return n;
}

// The cache file: magic, accuracy (f64), parameter count (u64), the fp32
// parameters in registration order, and a checksum of everything before it.
std::string encode_cache(double accuracy, const std::vector<float>& parameters) {
  std::string bytes(kMagic, sizeof kMagic);
  const std::uint64_t count = parameters.size();
  bytes.append(reinterpret_cast<const char*>(&accuracy), sizeof accuracy);
  bytes.append(reinterpret_cast<const char*>(&count), sizeof count);
  bytes.append(reinterpret_cast<const char*>(parameters.data()), parameters.size() * sizeof(float));
  const auto sum = checksum64(std::as_bytes(std::span(bytes.data(), bytes.size())));
  bytes.append(reinterpret_cast<const char*>(&sum), sizeof sum);
  return bytes;
}

void decode_cache(const std::string& path, std::size_t expected, double& accuracy,
                  std::vector<float>& parameters) {
  const std::string bytes = read_whole_file(path);
  const std::size_t header = sizeof kMagic + sizeof(double) + sizeof(std::uint64_t);
  const std::size_t size = header + expected * sizeof(float) + sizeof(std::uint64_t);
  const auto damaged = [&](const std::string& why) {
    return InvalidArgument("'" + path + "' is not a usable Fréchet classifier (" + why +
                           "); delete it and the classifier is trained again");
  };
  if (bytes.size() != size) {
    throw damaged(std::to_string(bytes.size()) + " bytes, expected " + std::to_string(size));
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) throw damaged("wrong magic");
  std::uint64_t sum = 0, count = 0;
  std::memcpy(&sum, bytes.data() + size - sizeof sum, sizeof sum);
  if (checksum64(std::as_bytes(std::span(bytes.data(), size - sizeof sum))) != sum) {
    throw damaged("checksum mismatch");
  }
  std::memcpy(&accuracy, bytes.data() + sizeof kMagic, sizeof accuracy);
  std::memcpy(&count, bytes.data() + sizeof kMagic + sizeof accuracy, sizeof count);
  if (count != expected) throw damaged("another model's parameter count");
  parameters.resize(expected);
  std::memcpy(parameters.data(), bytes.data() + header, expected * sizeof(float));
}

// Trains the classifier on a one-rank world of this thread's own.
TrainSummary train_alone(const ClassifierSettings& settings) {
  TrainSummary summary;
  run_in_process(1, [&](Transport& transport) {
    Communicator comm(transport);
    summary = train(comm, classifier_config(settings));
  });
  return summary;
}

}  // namespace

std::string ClassifierSettings::file_name() const {
  std::ostringstream name;
  name << "frechet-classifier-cnn-e" << epochs;
  if (max_steps_per_epoch > 0) name << "x" << max_steps_per_epoch;
  name << "-b" << batch << "-lr" << lr << "-s" << seed
       << ".bin";
  return name.str();
}

FeatureClassifier::FeatureClassifier(std::unique_ptr<Task> task, double accuracy)
    : task_(std::move(task)), accuracy_(accuracy) {}

// Rank 0 reads or trains, alone; the ranks then agree on whether it worked
// (so none waits for a rank 0 that failed) before the parameters and the
// accuracy travel from rank 0.
std::unique_ptr<FeatureClassifier> FeatureClassifier::load_or_train(
    Communicator& comm, const ClassifierSettings& settings, const std::string& cache_dir,
    const std::function<void(const std::string&)>& progress) {
  auto task = make_task(classifier_config(settings));
  const std::size_t count = parameter_count(*task);
  std::vector<float> parameters(count);
  std::vector<double> accuracy{0.0};
  std::string failure;
  if (comm.rank() == 0) {
    try {
      const std::string path = cache_dir.empty() ? "" : (fs::path(cache_dir) / settings.file_name()).string();
      if (!path.empty() && fs::exists(path)) {
        decode_cache(path, count, accuracy[0], parameters);
        if (progress) progress("Fréchet classifier: " + path);
      } else {
        if (progress) progress("Fréchet classifier: training the cnn on Fashion-MNIST (" +
                               std::to_string(settings.epochs) + " epochs)");
        const auto summary = train_alone(settings);
        accuracy[0] = summary.final_metric;
        parameters = summary.final_parameters;
        if (!path.empty()) {
          fs::create_directories(cache_dir);
          write_file_atomically(path, encode_cache(accuracy[0], parameters));
          if (progress) progress("Fréchet classifier: wrote " + path);
        }
      }
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  if (const auto failed = failures_of_ranks(comm, "the Fréchet classifier", failure);
      !failed.empty()) {
    throw InvalidArgument("Fréchet classifier: " + failed);
  }
  broadcast(comm, parameters, 0);
  sum_over_ranks(comm, accuracy, "Fréchet classifier accuracy");
  torch::NoGradGuard no_grad;
  std::size_t at = 0;
  for (auto& p : task->model().parameters()) {
    std::memcpy(p.data_ptr<float>(), parameters.data() + at, sizeof(float) * static_cast<std::size_t>(p.numel()));
    at += static_cast<std::size_t>(p.numel());
  }
  return std::unique_ptr<FeatureClassifier>(new FeatureClassifier(std::move(task), accuracy[0]));
}

torch::Tensor FeatureClassifier::features(const torch::Tensor& pixels) {
  return task_->features((pixels - kFashionMnistMean) / kFashionMnistStd);
}

GaussianStats FeatureClassifier::test_statistics(Communicator& comm) {
  MomentSums sums(dim());
  const std::size_t n = static_cast<std::size_t>(comm.size());
  std::vector<std::uint32_t> samples;
  const auto flush = [&] {
    if (samples.empty()) return;
    const auto f = task_->features(task_->batch(samples, true).input).contiguous();
    sums.add(std::span(f.data_ptr<float>(), static_cast<std::size_t>(f.numel())), samples.size());
    samples.clear();
  };
  for (std::size_t i = static_cast<std::size_t>(comm.rank()); i < task_->test_size(); i += n) {
    samples.push_back(static_cast<std::uint32_t>(i));
    if (samples.size() == 500) flush();
  }
  flush();
  sum_over_ranks(comm, sums.values(), "Fréchet real features");
  return sums.stats();
}

GaussianStats feature_statistics(
    Communicator& comm, FeatureClassifier& classifier, std::size_t count,
    const std::function<torch::Tensor(std::size_t first, std::size_t n)>& images,
    const std::string& what) {
  constexpr std::size_t kBatch = 500;
  MomentSums sums(classifier.dim());
  const std::size_t ranks = static_cast<std::size_t>(comm.size());
  for (std::size_t first = static_cast<std::size_t>(comm.rank()) * kBatch; first < count;
       first += ranks * kBatch) {
    const std::size_t n = std::min(kBatch, count - first);
    torch::NoGradGuard no_grad;
    const auto f = classifier.features(images(first, n)).contiguous();
    sums.add(std::span(f.data_ptr<float>(), static_cast<std::size_t>(f.numel())), n);
  }
  sum_over_ranks(comm, sums.values(), what);
  return sums.stats();
}

}  // namespace qccl::engines
