#include "qccl/training/optimizer_choice.h"

#include "qccl/common/errors.h"
#include "qccl/engines/optimizers.h"

namespace qccl::engines {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainConfig& c,
                                                        std::vector<torch::Tensor> parameters) {
  namespace optim = torch::optim;
  if (c.optimizer == "adam") {
    return std::make_unique<InPlaceAdam>(
        parameters,
        optim::AdamOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.eps).weight_decay(c.weight_decay));
  }
  if (c.optimizer == "adamw") {
    return std::make_unique<InPlaceAdamW>(
        parameters,
        optim::AdamWOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.eps).weight_decay(c.weight_decay));
  }
  if (c.optimizer == "sgd") {
    return std::make_unique<InPlaceSGD>(
        parameters, optim::SGDOptions(c.lr).momentum(c.momentum).weight_decay(c.weight_decay));
  }
  throw InvalidArgument("unknown optimizer '" + c.optimizer + "'; valid: sgd, adam, adamw");
}

}  // namespace qccl::engines
