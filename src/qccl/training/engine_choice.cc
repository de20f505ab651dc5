#include "qccl/training/engine_choice.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "qccl/common/errors.h"
#include "qccl/common/name_list.h"
#include "qccl/engines/data_parallel.h"
#include "qccl/engines/sharded.h"
#include "qccl/training/merge_scheduler.h"

namespace qccl::engines {
namespace {

using EngineBuilder =
    std::function<std::unique_ptr<Engine>(Communicator&, const TrainConfig&, Task&)>;

// Replicas that reduce their gradients bucket by bucket (data_parallel.h).
std::unique_ptr<Engine> data_parallel(Communicator& comm, const TrainConfig& config, Task& task) {
  std::vector<NamedTensor> named;
  for (const auto& item : task.model().named_parameters()) {
    named.emplace_back(item.key(), item.value());
  }
  EngineOptions options;
  options.codec = config.codec;
  options.seed = config.seed;
  options.collective.algorithm = config.algorithm;
  options.collective.between_hosts = config.between_hosts;
  options.policy = initial_bucket_policy(config);
  options.timeout = comm.options().timeout;
  // Row-wise table updates take the means as rows.
  options.sparse_means = config.embedding_optimizer != "dense";
  return std::make_unique<DataParallelEngine>(comm, std::move(named), options);
}

// QSDP: each rank owns 1/n of every parameter, gathers each block's weights
// before its passes and reduce-scatters its gradients (sharded.h).
std::unique_ptr<Engine> sharded(Communicator& comm, const TrainConfig& config, Task& task) {
  ShardedOptions options;
  options.weights_codec = config.weights_codec;
  options.gradients_codec = config.codec;
  options.seed = config.seed;
  options.collective.algorithm = config.algorithm;
  options.timeout = comm.options().timeout;
  auto engine =
      std::make_unique<ShardedEngine>(comm, sharded_units(task.model(), task.blocks()), options);
  task.set_block_runner(engine.get());
  return engine;
}

const std::map<std::string, EngineBuilder>& engines_by_name() {
  static const std::map<std::string, EngineBuilder> table{{"data-parallel", data_parallel},
                                                          {"sharded", sharded}};
  return table;
}

}  // namespace

std::unique_ptr<Engine> make_engine(Communicator& comm, const TrainConfig& config, Task& task) {
  const auto& table = engines_by_name();
  const auto found = table.find(config.engine);
  if (found == table.end()) {
    throw InvalidArgument("train: unknown engine '" + config.engine + "'; choose one of " +
                          joined_names(engine_names()));
  }
  return found->second(comm, config, task);
}

}  // namespace qccl::engines
