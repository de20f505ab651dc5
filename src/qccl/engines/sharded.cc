#include "qccl/engines/sharded.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <numeric>
#include <optional>
#include <unordered_set>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/broadcast.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/fingerprint.h"
#include "qccl/common/checksum.h"
#include "qccl/common/duration.h"
#include "qccl/common/errors.h"
#include "qccl/engines/archive_bytes.h"
#include "qccl/engines/sharded_parts.h"

namespace qccl::engines {
namespace {

constexpr std::string_view kMatrices = "matrices", kVectors = "biases and norms";

std::string_view group_kind(const torch::Tensor& p) { return p.dim() >= 2 ? kMatrices : kVectors; }

// A tensor of `elements` floats whose storage holds no memory yet.
torch::Tensor empty_storage_tensor(std::size_t elements) {
  auto t = torch::empty({static_cast<std::int64_t>(elements)});
  t.storage().unsafeGetStorageImpl()->reset();
  return t;
}


// A block as one node of the model's graph. Forward runs the block with
// autograd on a detached copy of its input, keeping the block's own graph
// (its activations, and views of its gathered weights, whose memory the
// engine then frees); backward hands the engine that graph and the output's
// gradient, and returns the input's gradient, once the engine has gathered
// the weights into the same memory again.
struct BlockFunction : torch::autograd::Function<BlockFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* context,
                               const torch::Tensor& input, ShardedEngine* engine,
                               std::int64_t block, const BlockForward* run) {
    torch::Tensor inner_input, inner_output;
    {
      torch::AutoGradMode enable(true);
      inner_input = input.detach().requires_grad_(true);
      inner_output = (*run)(inner_input);
    }
    context->saved_data["input"] = inner_input;
    context->saved_data["output"] = inner_output;
    context->saved_data["engine"] = reinterpret_cast<std::int64_t>(engine);
    context->saved_data["block"] = block;
    return inner_output.detach();
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* context,
                                                 torch::autograd::variable_list grad_outputs) {
    auto* engine = reinterpret_cast<ShardedEngine*>(context->saved_data["engine"].toInt());
    const auto block = static_cast<std::size_t>(context->saved_data["block"].toInt());
    auto input = context->saved_data["input"].toTensor();
    auto output = context->saved_data["output"].toTensor();
    context->saved_data.clear();  // the block's graph goes with its backward
    return {engine->backward_block(block, input, output, grad_outputs[0]), torch::Tensor(),
            torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

std::vector<ShardedUnit> sharded_units(torch::nn::Module& model,
                                       const std::vector<torch::nn::Module*>& blocks) {
  std::vector<ShardedUnit> units(1 + blocks.size());
  units[0].name = "outside the blocks";
  std::unordered_set<const void*> in_blocks;
  for (std::size_t l = 0; l < blocks.size(); ++l) {
    units[l + 1].name = "blocks." + std::to_string(l);
    for (const auto& item : blocks[l]->named_parameters()) {
      units[l + 1].parameters.emplace_back(units[l + 1].name + "." + item.key(), item.value());
      in_blocks.insert(item.value().unsafeGetTensorImpl());
    }
  }
  for (const auto& item : model.named_parameters()) {
    if (!in_blocks.contains(item.value().unsafeGetTensorImpl())) {
      units[0].parameters.emplace_back(item.key(), item.value());
    }
  }
  return units;
}

ShardedEngine::ShardedEngine(Communicator& comm, std::vector<ShardedUnit> units,
                             ShardedOptions options)
    : comm_(comm), options_(std::move(options)) {
  build_groups(std::move(units));
  check_layout_agrees();
  take_shards_from_root();
  for (std::size_t u = 0; u < units_.size(); ++u) release(u);
  weights_stream_ = std::make_unique<Stream>(comm_, "weights");
  gradients_stream_ = std::make_unique<Stream>(comm_, "gradients");
}

// The streams stop before the groups go (each lets what it was given
// finish). The model keeps whatever its parameters hold: nothing, unless
// gather_model() put the exact values there.
ShardedEngine::~ShardedEngine() { abandon_step(); }

// The groups (QSDP §5: matrices quantized per layer, "biases and
// normalization layers" in full precision): each of unit 0's matrices; the
// biases and norms of every unit together, gathered with unit 0 for the
// whole oracle (a fraction of a percent of a model's parameters, so one
// exchange for all of them instead of a small one per block and pass, each
// costing a collective's latency); then each block's matrices, one group
// per matrix, so that buckets, learned levels and the learned-levels
// threshold never span two layers. Each group's shards are the
// gradients codec's reduce-scatter blocks, which the weights' allgather
// uses too.
void ShardedEngine::build_groups(std::vector<ShardedUnit> units) {
  if (units.empty()) throw InvalidArgument("sharded engine: no units; unit 0 holds what is outside the blocks");
  std::vector<NamedTensor> vectors;
  for (const auto& given : units) {
    for (const auto& [name, p] : given.parameters) {
      if (p.scalar_type() != torch::kFloat || !p.is_contiguous() || !p.device().is_cpu()) {
        throw InvalidArgument("sharded engine: parameter '" + name +
                              "' must be a contiguous fp32 CPU tensor");
      }
      if (group_kind(p) == kVectors) vectors.emplace_back(name, p);
    }
  }
  for (std::size_t u = 0; u < units.size(); ++u) {
    Unit unit;
    unit.name = units[u].name;
    for (const auto& named : units[u].parameters) {
      if (u > 0 && group_kind(named.second) == kVectors) unit.vectors.push_back(named.second);
    }
    units_.push_back(std::move(unit));
    for (const auto& named : units[u].parameters) {
      if (group_kind(named.second) == kMatrices) add_group(u, units[u].name + ": " + named.first, {named});
    }
    if (u == 0) add_group(0, "every unit's " + std::string(kVectors), vectors);
  }
  if (elements_ == 0) throw InvalidArgument("sharded engine: the model has no parameters");
}

// A group of unit `unit` holding `parameters` (none: no group), with its
// codecs: the options' for matrices, fp32 for vectors.
void ShardedEngine::add_group(std::size_t unit, std::string name,
                              const std::vector<NamedTensor>& parameters) {
  auto group = std::make_unique<Group>();
  group->name = std::move(name);
  group->unit = unit;
  for (const auto& named : parameters) {
    const auto& p = named.second;
    group->parameters.push_back(p);
    group->shapes.push_back(p.sizes().vec());
    group->offsets.push_back(group->elements);
    group->elements += static_cast<std::size_t>(p.numel());
  }
  if (group->elements == 0) return;
  // Matrices take the options' codecs as they fit a tensor of this size
  // (learned levels only from learned_levels_min elements); vectors fp32.
  const bool quantized = group_kind(parameters.front().second) == kMatrices;
  const auto spec_for = [&](const CodecSpec& spec) -> std::string {
    if (!quantized) return "fp32";
    return make_codec(spec)->spec_for_tensor(group->elements, options_.learned_levels_min);
  };
  const std::uint64_t id = groups_.size();
  group->weights = make_codec(spec_for(options_.weights_codec), CodecSettings{options_.seed, 2 * id});
  group->gradients =
      make_codec(spec_for(options_.gradients_codec), CodecSettings{options_.seed, 2 * id + 1});
  group->weights->check_supported(CodecOperation::allgather);
  group->gradients->check_supported(CodecOperation::reduce_scatter_mean);
  group->flat = empty_storage_tensor(group->elements);
  group->shards = group->gradients->reduce_scatter_blocks(group->elements, comm_.size());
  for (const auto& r : group->shards) group->counts.push_back(r.count);
  const auto& mine = group->shards[static_cast<std::size_t>(comm_.rank())];
  group->shard = torch::zeros({static_cast<std::int64_t>(mine.count)});
  group->shard.mutable_grad() = torch::zeros_like(group->shard);
  elements_ += group->elements;
  units_[unit].groups.push_back(groups_.size());
  groups_.push_back(std::move(group));
}

// Every rank must shard the same groups with the same codecs: one checked
// call before the first step, so a rank with another model or codec fails
// at once on every rank instead of hanging in an exchange.
void ShardedEngine::check_layout_agrees() {
  std::string layout;
  for (const auto& g : groups_) {
    layout += g->name + " " + std::to_string(g->elements) + " " + g->weights->spec() + " / " +
              g->gradients->spec() + "; ";
  }
  Fingerprint fingerprint("sharded layout");
  fingerprint.add("units", static_cast<std::int64_t>(units_.size()))
      .add("parameter elements", static_cast<std::int64_t>(elements_))
      .add_text("groups and codecs", layout)
      .add_text("algorithm", to_string(options_.collective.algorithm));
  run_collective(comm_, fingerprint, comm_.timeout(options_.collective.timeout), [](int) {});
}

void ShardedEngine::take_shards_from_root() {
  torch::NoGradGuard no_grad;
  for (auto& g : groups_) {
    std::vector<float> flat(g->elements);
    for (std::size_t i = 0; i < g->parameters.size(); ++i) {
      const auto& p = g->parameters[i];
      std::memcpy(flat.data() + g->offsets[i], floats(p), sizeof(float) * static_cast<std::size_t>(p.numel()));
    }
    broadcast(comm_, flat, 0, options_.collective);
    const auto& mine = g->shards[static_cast<std::size_t>(comm_.rank())];
    std::memcpy(floats(g->shard), flat.data() + mine.first, sizeof(float) * mine.count);
  }
}

std::vector<torch::Tensor> ShardedEngine::optimizer_parameters() {
  std::vector<torch::Tensor> shards;
  for (const auto& g : groups_) shards.push_back(g->shard);
  return shards;
}

void ShardedEngine::broadcast_from_root(std::vector<torch::Tensor> buffers) {
  torch::NoGradGuard no_grad;
  for (auto& b : buffers) {
    if (b.scalar_type() != torch::kFloat || !b.is_contiguous()) continue;
    broadcast(comm_, std::span(floats(b), static_cast<std::size_t>(b.numel())), 0,
              options_.collective);
  }
}

// ---- Gathering and releasing weights ----------------------------------------

// Queues the unit's gather on the weights stream: each group's shards
// encoded by their owners with the weights codec at this oracle's codec
// step (so a second gather in the same oracle gives the same bits), and
// decoded on every rank into the group's flat tensor, given fresh memory
// here. The stream's thread also checksums what it gathered, off the
// training thread's path.
void ShardedEngine::submit_gather(std::size_t unit, Stream& stream) {
  auto& state = *state_;
  ShardedStreamTimes& times = state.times_of(stream, *weights_stream_);
  units_[unit].held = true;
  std::vector<float*> outputs;
  for (const std::size_t g : units_[unit].groups) {
    groups_[g]->allocate();
    outputs.push_back(floats(groups_[g]->flat));
    state.gathered_now += groups_[g]->elements;
  }
  peak_gathered_ = std::max(peak_gathered_, state.gathered_now);
  auto operation = [this, unit, outputs, &state, &times](Communicator& comm) {
    times.time([&](PhaseTimes* phases) {
      const auto& groups = units_[unit].groups;
      for (std::size_t i = 0; i < groups.size(); ++i) {
        auto& group = *groups_[groups[i]];
        group.weights->set_step(state.codec_step);
        CollectiveOptions options = options_.collective;
        options.phases = phases;
        group.weights->allgatherv(comm, std::span<const float>(floats(group.shard), group.shard.numel()),
                                  group.counts, std::span(outputs[i], group.elements), options);
      }
    });
    std::uint64_t checksum = kChecksumSeed;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const auto& group = *groups_[units_[unit].groups[i]];
      checksum = checksum64_lanes(std::as_bytes(std::span(outputs[i], group.elements)), checksum);
    }
    units_[unit].gathered_checksum = checksum;
  };
  units_[unit].gather = stream.submit("gather " + units_[unit].name, operation);
  state.exchanges.push_back(units_[unit].gather);
}

void ShardedEngine::install(std::size_t unit) {
  auto& u = units_[unit];
  auto& state = *state_;
  const auto start = Clock::now();
  u.gather.wait(options_.timeout);
  state.waiting += seconds_since(start);
  torch::NoGradGuard no_grad;
  for (const std::size_t g : u.groups) groups_[g]->point_at_flat();
  const std::uint64_t checksum = u.gathered_checksum;
  auto& first = state.forward_checksums[unit];
  if (!first) {
    first = checksum;
    state.checksum = checksum64(std::as_bytes(std::span(&checksum, 1)), state.checksum);
  } else if (*first != checksum) {
    throw Error("sharded engine: the weights gathered for the backward pass of " + u.name +
                " differ from its forward pass's at step " + std::to_string(state.codec_step) +
                "; the weights codec '" + options_.weights_codec.text() +
                "' must encode the same shard at the same step identically");
  }
}

// Frees the unit's gathered weights (a gather in flight for it is waited
// for first: it writes into that memory).
void ShardedEngine::release(std::size_t unit) {
  auto& u = units_[unit];
  if (u.gather.valid() && !u.gather.completed()) {
    try {
      u.gather.wait(options_.timeout);
    } catch (...) {  // its failure reaches the caller through the oracle's exchanges
    }
  }
  for (const std::size_t g : u.groups) {
    if (state_ != nullptr && u.held) state_->gathered_now -= groups_[g]->elements;
    groups_[g]->free_data();
  }
  u.held = false;
}

// ---- One oracle ---------------------------------------------------------------

// Unit 0 (with every unit's vectors) is gathered for the whole oracle; the
// model's forward then runs the blocks through run() and its backward
// through backward_block(); unit 0's gradients, complete only when backward
// returns, are reduce-scattered last.
//
// At both ends of the oracle one stream has nothing to do, and the chain
// of exchanges there is what the training thread waits for: at the start
// block 0's gather runs on the gradients stream beside unit 0's, instead
// of queued behind it; at the end unit 0's reduce-scatters run on the
// weights stream (its last gather, block 0's, is done once block 0's
// backward has begun) beside block 0's reduce-scatter. Every rank makes
// the same choices, so each stream still runs the same calls in the same
// order on every rank.
void ShardedEngine::compute_gradients(const std::function<torch::Tensor()>& loss,
                                      OracleResult& result) {
  if (model_gathered_ > 0) {
    throw InvalidArgument("sharded engine: compute_gradients() while the model is gathered; "
                          "release_model() first");
  }
  abandon_step();
  state_ = std::make_unique<StepState>();
  state_->codec_step = step_++;
  state_->forward_checksums.resize(units_.size());
  const auto start = Clock::now();
  try {
    submit_gather(0);
    if (units_.size() > 1) submit_gather(1, *gradients_stream_);
    install(0);
    const auto value = loss();
    if (std::isnan(result.loss)) result.loss = value.item<double>();
    if (state_->next_block != units_.size() - 1) {
      throw InvalidArgument("sharded engine: the model's forward ran " +
                            std::to_string(state_->next_block) + " of its " +
                            std::to_string(units_.size() - 1) + " blocks; it must run each once");
    }
    value.backward();
    if (state_->backward_blocks != units_.size() - 1) {
      throw InvalidArgument("sharded engine: backward reached " +
                            std::to_string(state_->backward_blocks) + " of the " +
                            std::to_string(units_.size() - 1) +
                            " blocks; every block's input must depend on parameters");
    }
    std::vector<torch::Tensor> gradients;
    for (const std::size_t g : units_[0].groups) {
      for (auto& p : groups_[g]->parameters) {
        gradients.push_back(p.grad());
        p.mutable_grad() = torch::Tensor();
      }
    }
    scatter_unit(0, gradients, *weights_stream_);
    release(0);
    result.compute += seconds_since(start) - state_->waiting;
    finish_exchanges(result);
  } catch (...) {
    abandon_step();
    throw;
  }
  gathered_checksum_ = state_->checksum;
  state_.reset();
}

torch::Tensor ShardedEngine::run(std::size_t block, const torch::Tensor& input,
                                 const BlockForward& forward) {
  if (model_gathered_ > 0) return forward(input);  // evaluation on the exact model
  if (state_ == nullptr) {
    throw InvalidArgument("sharded engine: block " + std::to_string(block) +
                          " ran outside compute_gradients(); gather_model() first to run the "
                          "model on its own");
  }
  if (block != state_->next_block || block + 1 >= units_.size()) {
    throw InvalidArgument("sharded engine: the model ran block " + std::to_string(block) +
                          " where block " + std::to_string(state_->next_block) +
                          " was due; blocks must run once each, in order");
  }
  ++state_->next_block;
  const std::size_t unit = block + 1;
  const bool last = unit + 1 == units_.size();
  install(unit);
  if (!last) submit_gather(unit + 1);  // prefetch
  auto output = BlockFunction::apply(input, this, static_cast<std::int64_t>(block), &forward);
  // The last block's weights stay for its backward, which comes next (as
  // FSDP keeps them): one gather less per oracle. The block backward
  // reaches after it is gathered meanwhile, during the loss.
  if (!last) {
    release(unit);
  } else if (unit > 1) {
    submit_gather(unit - 1);
  }
  return output;
}

torch::Tensor ShardedEngine::backward_block(std::size_t block, const torch::Tensor& input,
                                            const torch::Tensor& output,
                                            const torch::Tensor& grad_output) {
  const std::size_t unit = block + 1;
  ++state_->backward_blocks;
  install(unit);
  // Prefetch the block backward reaches next (the last block's forward
  // prefetched the one before it).
  if (block > 0 && !units_[unit - 1].held) submit_gather(unit - 1);
  // The input, the block's matrices (this unit's groups), then its vectors.
  std::vector<torch::Tensor> inputs{input};
  for (const std::size_t g : units_[unit].groups) {
    for (const auto& p : groups_[g]->parameters) inputs.push_back(p);
  }
  const auto matrices_end = static_cast<std::ptrdiff_t>(inputs.size());
  auto& vectors = units_[unit].vectors;
  inputs.insert(inputs.end(), vectors.begin(), vectors.end());
  const auto gradients = torch::autograd::grad({output}, inputs, {grad_output},
                                               /*retain_graph=*/false, /*create_graph=*/false,
                                               /*allow_unused=*/true);
  scatter_unit(unit,
               std::vector<torch::Tensor>(gradients.begin() + 1, gradients.begin() + matrices_end),
               *gradients_stream_);
  // Reduce-scattered with unit 0's groups once backward is done.
  for (std::size_t j = 0; j < vectors.size(); ++j) {
    vectors[j].mutable_grad() = gradients[static_cast<std::size_t>(matrices_end) + j];
  }
  release(unit);
  return gradients[0];
}

void ShardedEngine::scatter_unit(std::size_t unit, const std::vector<torch::Tensor>& gradients,
                                 Stream& stream) {
  torch::NoGradGuard no_grad;
  std::size_t at = 0;
  for (const std::size_t g : units_[unit].groups) {
    const auto& group = *groups_[g];
    const std::vector<torch::Tensor> own(gradients.begin() + static_cast<std::ptrdiff_t>(at),
                                         gradients.begin() + static_cast<std::ptrdiff_t>(at + group.parameters.size()));
    at += group.parameters.size();
    submit_reduce_scatter(g, group.flat_gradient(own), stream);
  }
}

// Queues the group's reduce-scatter: rank r gets the mean of its shard's
// gradients in its shard's .grad. A NonFiniteError (some rank's gradient
// holds NaN or Inf) comes on every rank before any data moves, named here.
void ShardedEngine::submit_reduce_scatter(std::size_t group, torch::Tensor flat_gradient,
                                          Stream& stream) {
  auto& state = *state_;
  ShardedStreamTimes& times = state.times_of(stream, *weights_stream_);
  const std::uint64_t step = state.codec_step;
  float* mean = floats(groups_[group]->shard.mutable_grad());
  auto operation = [this, group, flat = std::move(flat_gradient), mean, &times,
                    step](Communicator& comm) {
    auto& g = *groups_[group];
    g.gradients->set_step(step);
    CollectiveOptions options = options_.collective;
    try {
      times.time([&](PhaseTimes* phases) {
        options.phases = phases;
        g.gradients->reduce_scatter_mean(comm, std::span<const float>(floats(flat), g.elements),
                                         std::span(mean, static_cast<std::size_t>(g.shard.numel())),
                                         options);
      });
    } catch (const NonFiniteError& e) {
      throw NonFiniteError("sharded engine, step " + std::to_string(step) + ", gradients of " +
                           g.name + ": " + e.what());
    }
  };
  state.exchanges.push_back(stream.submit("reduce-scatter " + groups_[group]->name, operation));
}

void ShardedEngine::finish_exchanges(OracleResult& result) {
  auto& state = *state_;
  const auto start = Clock::now();
  std::exception_ptr first;
  for (const auto& work : state.exchanges) {
    try {
      work.wait(options_.timeout);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  result.waiting += state.waiting + seconds_since(start);
  result.encode += state.weights.phases.encode + state.gradients.phases.encode;
  result.decode += state.weights.phases.decode + state.gradients.phases.decode;
  result.communicate += state.weights.communicate + state.gradients.communicate;
  if (first) std::rethrow_exception(first);
}

void ShardedEngine::abandon_step() noexcept {
  if (state_ == nullptr) return;
  for (const auto& work : state_->exchanges) {
    try {
      work.wait(options_.timeout);
    } catch (...) {  // the oracle's own failure is already on its way
    }
  }
  for (std::size_t u = 0; u < units_.size(); ++u) {
    for (const std::size_t g : units_[u].groups) {
      for (auto& p : groups_[g]->parameters) p.mutable_grad() = torch::Tensor();
    }
    release(u);
  }
  state_.reset();
}

}  // namespace qccl::engines
