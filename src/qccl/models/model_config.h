// What a model is built from: its name, its data and its sizes, the part of
// a training run's settings (TrainConfig) that the models read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl::engines {

struct ModelConfig {
  std::string model = "cnn";              // mlp | cnn | resmlp | char-lstm | gpt | recommender
  std::string data;                       // fashion-mnist | fortunes | clicks; empty: the model's
  std::string data_dir;                   // empty: the dataset's Debian location
  std::uint64_t seed = 1;                 // the run's: initial weights, data order, codecs
  // Sizes of the models that have them.
  std::size_t sequence_length = 64;       // char-lstm, gpt
  std::size_t hidden = 256;               // char-lstm, gpt (its width)
  std::size_t layers = 4;                 // gpt
  // gpt: outlier rows at initialisation, to study quantization without
  // buckets (QSDP §6). `gpt_outlier_rows` rows of every block's linear
  // weight, evenly spaced, are multiplied by `gpt_outlier_scale`; 0 rows:
  // none (the default).
  std::size_t gpt_outlier_rows = 0;
  double gpt_outlier_scale = 1.0;
  std::size_t fields = 8, values_per_field = 100000;  // recommender
  // recommender: embedding tables with sparse gradients (the rows a batch
  // touched), which the engine reduces in proportion to those rows.
  bool sparse_embeddings = true;
  std::size_t click_samples = 200000;     // recommender training samples
};

std::vector<std::string> model_names();
// The dataset a model learns from: fashion-mnist (mlp, cnn), fortunes
// (char-lstm), clicks (recommender).
std::string dataset_for_model(const std::string& model);
std::vector<std::string> dataset_names();
// Reads "ROWS:SCALE" (`--gpt-outliers 2:16`) into gpt_outlier_rows and
// gpt_outlier_scale; throws InvalidArgument for any other form.
void set_gpt_outliers(ModelConfig& config, const std::string& text);
// The outlier rows in words, "" without them: ", outlier rows 2 x16".
std::string gpt_outliers_text(const ModelConfig& config);

// Throws InvalidArgument naming the setting: an unknown model or dataset, a
// dataset the model does not learn from, a size out of range.
void validate(const ModelConfig& config);

// The model's parameter count from its sizes alone, before anything is
// built: exact for the models over Fashion-MNIST and clicks; for the
// character models an upper bound, taking the alphabet at its largest (256
// bytes). For sizing a run before it starts.
std::uint64_t parameter_count_bound(const ModelConfig& config);
// The bytes of data one rank holds in memory: Fashion-MNIST's images and
// labels (both splits); 0 for the text (a few MB) and the generated
// clicks, which are made sample by sample.
std::uint64_t dataset_bytes(const ModelConfig& config);

}  // namespace qccl::engines
QCCL_API_END
