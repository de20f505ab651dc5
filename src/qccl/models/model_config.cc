#include "qccl/models/model_config.h"

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
  require(c.fields >= 1 && c.fields <= 64, "--fields must be in 1..64");
  require(c.values_per_field >= 2 && c.values_per_field <= (std::size_t{1} << 26),
          "--values-per-field must be in 2..2^26");
  require(c.click_samples >= 10 && c.click_samples < (std::size_t{1} << 31),
          "--click-samples must be in 10..2^31");
}

}  // namespace qccl::engines
