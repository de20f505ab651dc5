#include "qccl/models/model_config.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "qccl/common/errors.h"
#include "qccl/common/name_list.h"

namespace qccl::engines {
namespace {

// The models are trained by `qccl train`: its messages name the options.
void require(bool ok, const std::string& message) {
  if (!ok) throw InvalidArgument("train: " + message);
}

}  // namespace

std::string dataset_for_model(const std::string& model) {
  if (model == "mlp" || model == "cnn" || model == "resmlp") return "fashion-mnist";
  if (model == "char-lstm" || model == "gpt") return "fortunes";
  return "clicks";
}

std::vector<std::string> model_names() {
  return {"mlp", "cnn", "resmlp", "char-lstm", "gpt", "recommender"};
}
std::vector<std::string> dataset_names() { return {"fashion-mnist", "fortunes", "clicks"}; }

void validate(const ModelConfig& c) {
  require(contains_name(model_names(), c.model),
          "unknown model '" + c.model + "'; choose one of " + joined_names(model_names()));
  const std::string data = c.data.empty() ? dataset_for_model(c.model) : c.data;
  require(contains_name(dataset_names(), data),
          "unknown dataset '" + data + "'; choose one of " + joined_names(dataset_names()));
  require(dataset_for_model(c.model) == data, "model '" + c.model + "' learns from '" +
                                                  dataset_for_model(c.model) + "', not '" + data + "'");
  require(c.sequence_length >= 2 && c.sequence_length <= 4096, "--sequence-length must be in 2..4096");
  require(c.hidden >= 1 && c.hidden <= 8192, "--hidden must be in 1..8192");
  require(c.layers >= 1 && c.layers <= 64, "--layers must be in 1..64");
  require(c.gpt_outlier_rows == 0 || c.model == "gpt",
          "--gpt-outliers applies to --model gpt only");
  require(c.gpt_outlier_rows <= c.hidden,
          "--gpt-outliers: at most --hidden rows of each weight (every block's layers have at "
          "least that many)");
  require(std::isfinite(c.gpt_outlier_scale) && c.gpt_outlier_scale > 0,
          "--gpt-outliers: the scale must be a positive finite number");
  require(c.fields >= 1 && c.fields <= 64, "--fields must be in 1..64");
  require(c.values_per_field >= 2 && c.values_per_field <= (std::size_t{1} << 26),
          "--values-per-field must be in 2..2^26");
  require(c.click_samples >= 10 && c.click_samples < (std::size_t{1} << 31),
          "--click-samples must be in 10..2^31");
}

void set_gpt_outliers(ModelConfig& config, const std::string& text) {
  const auto colon = text.find(':');
  std::size_t rows = 0, used = 0;
  double scale = 0;
  bool read = colon != std::string::npos && colon > 0;
  try {
    if (read) {
      const std::string rows_text = text.substr(0, colon), scale_text = text.substr(colon + 1);
      read = rows_text.find_first_not_of("0123456789") == std::string::npos;
      rows = read ? std::stoull(rows_text) : 0;
      scale = std::stod(scale_text, &used);
      read = read && used == scale_text.size();
    }
  } catch (const std::logic_error&) {
    read = false;
  }
  require(read, "--gpt-outliers takes ROWS:SCALE, e.g. 2:16 (2 rows of every block's weights "
                "times 16), not '" + text + "'");
  config.gpt_outlier_rows = rows;
  config.gpt_outlier_scale = scale;
}

std::string gpt_outliers_text(const ModelConfig& config) {
  if (config.gpt_outlier_rows == 0) return "";
  std::ostringstream text;
  text << ", outlier rows " << config.gpt_outlier_rows << " x" << config.gpt_outlier_scale;
  return text.str();
}

namespace {

constexpr std::uint64_t linear(std::uint64_t in, std::uint64_t out) { return in * out + out; }
constexpr std::uint64_t kLargestAlphabet = 256;

}  // namespace

// The architectures of models/tasks.cc, layer by layer.
std::uint64_t parameter_count_bound(const ModelConfig& c) {
  const std::uint64_t width = c.hidden, vocabulary = kLargestAlphabet;
  if (c.model == "mlp") return linear(784, 256) + linear(256, 128) + linear(128, 10);
  if (c.model == "cnn") {
    return (1 * 16 * 25 + 16) + (16 * 32 * 25 + 32) + linear(512, 128) + linear(128, 10);
  }
  if (c.model == "resmlp") {
    constexpr std::uint64_t kWidth = 512, kDepth = 24, kNorm = 2 * kWidth;
    return linear(784, kWidth) + kDepth * (kNorm + linear(kWidth, kWidth)) + kNorm +
           linear(kWidth, 10);
  }
  if (c.model == "char-lstm") {
    constexpr std::uint64_t kEmbedding = 64;
    return vocabulary * kEmbedding + 4 * width * (kEmbedding + width) + 8 * width +
           linear(width, vocabulary);
  }
  if (c.model == "gpt") {
    // Per block: two LayerNorms, qkv, the projection and the 4x MLP.
    const std::uint64_t block = 4 * width + linear(width, 3 * width) + linear(width, width) +
                                linear(width, 4 * width) + linear(4 * width, width);
    return vocabulary * width + c.sequence_length * width + c.layers * block + 2 * width;
  }
  constexpr std::uint64_t kDim = 16;  // the recommender's embedding width
  return c.fields * c.values_per_field * kDim + linear(c.fields * kDim, 128) + linear(128, 64) +
         linear(64, 1);
}

std::uint64_t dataset_bytes(const ModelConfig& c) {
  if (dataset_for_model(c.model) != "fashion-mnist") return 0;
  constexpr std::uint64_t kSamples = 60000 + 10000, kBytesPerSample = 28 * 28 + 1;
  return kSamples * kBytesPerSample;
}

}  // namespace qccl::engines
