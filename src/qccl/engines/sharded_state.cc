#include <algorithm>
#include <string>
#include <vector>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/common/errors.h"
#include "qccl/engines/archive_bytes.h"
#include "qccl/engines/sharded.h"
#include "qccl/engines/sharded_parts.h"

namespace qccl::engines {

// ---- The whole model, exactly ---------------------------------------------------

void ShardedEngine::gather_model() {
  if (state_ != nullptr) {
    throw InvalidArgument("sharded engine: gather_model() inside an oracle");
  }
  if (model_gathered_ > 0) {
    ++model_gathered_;
    return;
  }
  const auto exact = make_codec("fp32");
  for (auto& g : groups_) {
    g->allocate();
    exact->allgatherv(comm_, std::span<const float>(floats(g->shard), g->shard.numel()), g->counts,
                      std::span(floats(g->flat), g->elements), options_.collective);
    g->point_at_flat();
  }
  model_gathered_ = 1;
}

bool ShardedEngine::gather_computed_model() {
  if (state_ != nullptr || model_gathered_ > 0) {
    throw InvalidArgument("sharded engine: gather_computed_model() inside an oracle or while the "
                          "model is gathered; release_model() first");
  }
  const bool quantized = std::any_of(groups_.begin(), groups_.end(), [](const auto& g) {
    return g->weights->spec() != "fp32";
  });
  if (!quantized) return false;
  for (auto& g : groups_) {
    const auto saved = g->weights->save_state();
    const std::uint64_t saved_step = g->weights->step();
    g->allocate();
    g->weights->set_step(step_);
    g->weights->allgatherv(comm_, std::span<const float>(floats(g->shard), g->shard.numel()), g->counts,
                           std::span(floats(g->flat), g->elements), options_.collective);
    g->weights->load_state(saved);
    g->weights->set_step(saved_step);
    g->point_at_flat();
  }
  model_gathered_ = 1;
  return true;
}

void ShardedEngine::release_model() {
  if (model_gathered_ == 0 || --model_gathered_ > 0) return;
  for (auto& g : groups_) g->free_data();
}

// ---- Checkpoints and reports -----------------------------------------------------

void ShardedEngine::save(torch::serialize::OutputArchive& archive) const {
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const auto key = "sharded." + std::to_string(g);
    archive.write(key + ".shard", groups_[g]->shard.detach());
    archive.write(key + ".weights", bytes_tensor(groups_[g]->weights->save_state()));
    archive.write(key + ".gradients", bytes_tensor(groups_[g]->gradients->save_state()));
  }
}

// Every group's shard is read and its size checked before any is
// installed, so a checkpoint of another layout leaves the engine as it was.
void ShardedEngine::load(torch::serialize::InputArchive& archive) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> shards(groups_.size()), weights(groups_.size()),
      gradients(groups_.size());
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const auto& group = *groups_[g];
    const auto key = "sharded." + std::to_string(g);
    archive.read(key + ".shard", shards[g]);
    if (shards[g].numel() != group.shard.numel()) {
      throw InvalidArgument("checkpoint: the shard of " + group.name + " holds " +
                            std::to_string(shards[g].numel()) + " values where this rank owns " +
                            std::to_string(group.shard.numel()) +
                            "; resume with the model, rank count and qccl version that wrote it");
    }
    archive.read(key + ".weights", weights[g]);
    archive.read(key + ".gradients", gradients[g]);
  }
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    auto& group = *groups_[g];
    group.shard.copy_(shards[g]);
    group.weights->load_state(bytes_of(weights[g]));
    group.gradients->load_state(bytes_of(gradients[g]));
  }
}

std::string ShardedEngine::codec_spec() const {
  return options_.gradients_codec.text();
}

std::string ShardedEngine::weights_codec_spec() const {
  return options_.weights_codec.text();
}

std::string ShardedEngine::layout_name() const {
  return "sharded: " + std::to_string(groups_.size()) + " groups, gathered block by block";
}

double ShardedEngine::payload_bytes() const {
  const auto rank = static_cast<std::size_t>(comm_.rank());
  double bytes = 0;
  for (const auto& g : groups_) {
    const double gathers = g->unit == 0 || g->unit + 1 == units_.size() ? 1 : 2;
    bytes += gathers * static_cast<double>(g->weights->wire_bytes(g->counts[rank]));
    bytes += static_cast<double>(g->gradients->wire_bytes(g->elements));
  }
  return bytes;
}

std::uint64_t ShardedEngine::bytes_sent() const {
  return weights_stream_->data_bytes_sent() + gradients_stream_->data_bytes_sent();
}

std::string ShardedEngine::describe_group(std::size_t group) const {
  return groups_.at(group)->name + ", " + std::to_string(groups_[group]->elements) + " elements";
}

std::string ShardedEngine::group_weights_spec(std::size_t group) const {
  return groups_.at(group)->weights->spec();
}

std::string ShardedEngine::group_gradients_spec(std::size_t group) const {
  return groups_.at(group)->gradients->spec();
}

}  // namespace qccl::engines
