#include "qccl/training/optimizer_choice.h"

#include <algorithm>
#include <set>

#include "qccl/common/errors.h"
#include "qccl/engines/optimizers.h"

namespace qccl::engines {
namespace {

namespace optim = torch::optim;

// `parameters` as one group, or as the rest and the tables (in that order).
std::vector<optim::OptimizerParamGroup> parameter_groups(const std::vector<torch::Tensor>& parameters,
                                                         const std::vector<torch::Tensor>& tables,
                                                         bool split) {
  if (!split) return {optim::OptimizerParamGroup(parameters)};
  std::set<const void*> table_set;
  for (const auto& t : tables) table_set.insert(t.unsafeGetTensorImpl());
  std::vector<torch::Tensor> rest, own_tables;
  for (const auto& p : parameters) {
    (table_set.count(p.unsafeGetTensorImpl()) ? own_tables : rest).push_back(p);
  }
  return {optim::OptimizerParamGroup(rest), optim::OptimizerParamGroup(own_tables)};
}

}  // namespace

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainConfig& c,
                                                        std::vector<torch::Tensor> parameters,
                                                        const std::vector<torch::Tensor>& tables) {
  const RowUpdate rows = row_update_from_name(c.embedding_optimizer);
  const bool split = rows != RowUpdate::dense || c.embedding_lr > 0;
  if (split && tables.empty()) {
    throw InvalidArgument("--embedding-optimizer " + c.embedding_optimizer + " / --embedding-lr: "
                          "the model has no embedding tables with sparse gradients (the "
                          "recommender has them, unless --dense-embeddings)");
  }
  auto groups = parameter_groups(parameters, tables, split);
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  if (c.optimizer == "adam") {
    optimizer = std::make_unique<InPlaceAdam>(
        groups,
        optim::AdamOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.eps).weight_decay(c.weight_decay));
  } else if (c.optimizer == "adamw") {
    optimizer = std::make_unique<InPlaceAdamW>(
        groups,
        optim::AdamWOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.eps).weight_decay(c.weight_decay));
  } else if (c.optimizer == "sgd") {
    optimizer = std::make_unique<InPlaceSGD>(
        groups, optim::SGDOptions(c.lr).momentum(c.momentum).weight_decay(c.weight_decay));
  } else {
    throw InvalidArgument("unknown optimizer '" + c.optimizer + "'; valid: sgd, adam, adamw");
  }
  if (split) {
    const double factor = c.embedding_lr > 0 ? c.embedding_lr / c.lr : 1.0;
    dynamic_cast<GroupRules&>(*optimizer).set_group_rule(1, {rows, factor});
    set_learning_rate(*optimizer, c.lr);
  }
  return optimizer;
}

std::vector<torch::Tensor> sparse_embedding_tables(torch::nn::Module& model) {
  std::vector<torch::Tensor> tables;
  const auto add = [&tables](torch::nn::Module& module) {
    if (const auto* embedding = module.as<torch::nn::Embedding>()) {
      if (embedding->options.sparse()) tables.push_back(embedding->weight);
    }
  };
  add(model);  // itself without a shared_ptr (a task's model may live in place)
  for (const auto& module : model.modules(/*include_self=*/false)) add(*module);
  return tables;
}

}  // namespace qccl::engines
