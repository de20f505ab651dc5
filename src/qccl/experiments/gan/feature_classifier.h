// The feature extractor of qccl's Fréchet distance: the `cnn` task's
// classifier trained on Fashion-MNIST by qccl itself (no downloaded
// Inception weights exist here), whose penultimate layer (128 ReLU units)
// gives the features. A distance on these features ranks generators the way
// FID does on natural images, but its values are not FIDs and do not
// compare with published ones.
//
// The classifier is trained once per settings and cached in a file keyed by
// them, so every run with the same settings scores with the same network.
// It is trained by rank 0 alone on a one-rank world of its own, so it does
// not depend on how many ranks the caller runs.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "qccl/collectives/communicator.h"
#include "qccl/experiments/gan/frechet.h"
#include "qccl/models/tasks.h"

namespace qccl::engines {

struct ClassifierSettings {
  int epochs = 2;
  std::size_t max_steps_per_epoch = 0;  // 0: the whole training set (tests: a few)
  std::size_t batch = 64;  // SGD with momentum 0.9, as `qccl train --model cnn`
  double lr = 0.05;
  std::uint64_t seed = 1;
  std::string data_dir;    // empty: Debian's Fashion-MNIST
  int threads = 1;
  // The cache file's name: "frechet-classifier-cnn-e2-b64-lr0.05-s1.bin"
  // ("-e2x20-" with at most 20 steps per epoch).
  std::string file_name() const;
};

class FeatureClassifier {
 public:
  // Collective: rank 0 reads `cache_dir`/file_name(), or, when it is not
  // there, trains the classifier and writes it there (`progress` hears
  // about it); then every rank gets rank 0's parameters. A damaged cache
  // file (size or checksum) fails every rank, naming the file. With an
  // empty `cache_dir` nothing is cached.
  static std::unique_ptr<FeatureClassifier> load_or_train(
      Communicator& comm, const ClassifierSettings& settings, const std::string& cache_dir,
      const std::function<void(const std::string&)>& progress);

  double test_accuracy() const { return accuracy_; }
  std::size_t dim() const { return 128; }
  // Penultimate-layer features, [N, dim()], of images [N, 1, 28, 28] with
  // pixels in [0, 1].
  torch::Tensor features(const torch::Tensor& pixels);
  // Statistics of the features of the Fashion-MNIST test set (10 000
  // images), each rank taking every n-th, summed over ranks. Collective.
  GaussianStats test_statistics(Communicator& comm);

 private:
  FeatureClassifier(std::unique_ptr<Task> task, double accuracy);
  std::unique_ptr<Task> task_;
  double accuracy_ = 0;
};

// Features of `count` images produced in batches by `images(first, n)`
// (pixels in [0, 1]), rank r taking the batches of images r·B, (r + n)·B,
// ...: statistics summed over ranks (`what` names the call). Collective.
GaussianStats feature_statistics(
    Communicator& comm, FeatureClassifier& classifier, std::size_t count,
    const std::function<torch::Tensor(std::size_t first, std::size_t n)>& images,
    const std::string& what);

}  // namespace qccl::engines
