#include "qccl/training/train_config.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"
#include "qccl/common/name_list.h"
#include "qccl/engines/lr_schedule.h"
#include "qccl/engines/row_update.h"
#include "qccl/scheduling/bucket_plan.h"

namespace qccl::engines {
namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw InvalidArgument("train: " + message);
}

std::string format_value(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

}  // namespace

std::vector<std::string> optimizer_names() { return {"sgd", "adam", "adamw"}; }
std::vector<std::string> engine_names() { return {"data-parallel", "sharded"}; }  // engine_choice.cc
EngineCodecs default_codecs(const std::string& engine) {
  if (engine == "sharded") return {"minmax:bits=8", "minmax:bits=8,rounding=shift"};
  return {"fp32", "fp32"};
}

std::vector<std::string> bucket_policy_names() {
  return {"ddp", "layerwise", "one", "groups:N1,N2,..", "mergecomp"};
}

std::string bucket_settings(const TrainConfig& c) {
  if (c.buckets == "ddp") {
    return "ddp: cap " + std::to_string(c.bucket_cap_bytes) + " B, first " +
           std::to_string(c.first_bucket_bytes) + " B";
  }
  if (c.buckets != "mergecomp") return c.buckets;
  std::ostringstream text;
  text << "mergecomp: " << c.plan_steps << " steps profiled, at most " << c.plan_max_groups
       << " groups, alpha " << c.plan_alpha << ", link rate "
       << (c.plan_link_rate > 0 ? std::to_string(c.plan_link_rate) + " B/s" : "measured")
       << " (DDP's rule for comparison: cap " << c.bucket_cap_bytes << " B, first "
       << c.first_bucket_bytes << " B)";
  return text.str();
}

std::string exchange_settings(const TrainConfig& c) {
  const std::string& gradients = c.codec.text();
  if (c.engine != "sharded") return gradients;
  return "sharded, weights " + c.weights_codec.text() + ", gradients " + gradients;
}

std::string embedding_optimizer_text(const TrainConfig& c) {
  if (c.embedding_optimizer == "dense" && c.embedding_lr == 0) return "";
  std::ostringstream text;
  text << " embeddings=" << c.embedding_optimizer;
  if (c.embedding_lr > 0) text << " lr=" << c.embedding_lr;
  return text.str();
}

void validate(const TrainConfig& c) {
  validate(static_cast<const ModelConfig&>(c));
  require(contains_name(optimizer_names(), c.optimizer),
          "unknown optimizer '" + c.optimizer + "'; choose one of " + joined_names(optimizer_names()));
  require(contains_name(engine_names(), c.engine),
          "unknown engine '" + c.engine + "'; choose one of " + joined_names(engine_names()));
  const auto codec = make_codec(c.codec);  // throws listing the valid codecs and parameters
  const auto weights = make_codec(c.weights_codec);
  require(c.engine == "sharded" || c.weights_codec == CodecSpec(),
          "--weights-codec applies to --engine sharded only (data-parallel replicas send no "
          "weights)");
  if (c.engine == "sharded") {
    require(codec->supports(CodecOperation::reduce_scatter_mean),
            "--engine sharded reduce-scatters gradients, which '" + codec->spec() +
                "' does not offer; choose a codec with a reduce-scatter (fp32, fp16, minmax, ...)");
    require(weights->supports(CodecOperation::allgather),
            "--engine sharded gathers weights, which '" + weights->spec() +
                "' does not offer; choose a codec with an allgather (fp32, fp16, minmax, ...)");
    require(codec->step_feedback() == nullptr && weights->step_feedback() == nullptr,
            "--engine sharded gives codecs no optimizer feedback; '" + codec->spec() +
                "' needs it (use it with --engine data-parallel)");
    require(c.algorithm != Algorithm::native && c.algorithm != Algorithm::hierarchical,
            "--engine sharded runs on ring or halving-doubling, not --algo " +
                std::string(to_string(c.algorithm)));
    require(c.buckets == "ddp", "--buckets applies to --engine data-parallel; the sharded engine "
                                "exchanges one block at a time");
  }
  require(c.algorithm != Algorithm::native || codec->has_native_equivalent() ||
              codec->aggregation() == Aggregation::allgather_decode,
          "--algo native (MPI_Allreduce) runs only codecs MPI can sum, fp32 and fp16; '" +
              codec->spec() + "' runs on ring or halving-doubling");
  require(c.algorithm != Algorithm::hierarchical || codec->traits().host_means,
          "--algo hierarchical compresses host means, which '" + codec->spec() +
              "' cannot (it selects, scales or keeps state from each rank's own input, or "
              "wraps error feedback): use fp32, fp16, global-qsgd, qsgd or natural, or --algo "
              "ring");
  // The optimizers hold their settings as floats: a larger value would fail
  // inside libtorch without naming the option.
  constexpr double kFloatMax = std::numeric_limits<float>::max();
  require(std::isfinite(c.lr) && c.lr > 0 && c.lr <= kFloatMax,
          "--lr must be a positive number of at most 3.4e38 (a float), not " + format_value(c.lr));
  validate(LrSchedule{c.lr_schedule, c.lr, c.warmup_steps, 0});
  require(c.momentum >= 0 && c.momentum < 1, "--momentum must be in [0, 1)");
  require(c.weight_decay >= 0 && c.weight_decay <= kFloatMax,
          "--weight-decay must be a number in [0, 3.4e38], not " + format_value(c.weight_decay));
  require(c.beta1 >= 0 && c.beta1 < 1 && c.beta2 >= 0 && c.beta2 < 1, "Adam's betas must be in [0, 1)");
  require(c.eps > 0 && c.eps <= kFloatMax,
          "--eps must be a positive number of at most 3.4e38, not " + format_value(c.eps));
  const RowUpdate rows = row_update_from_name(c.embedding_optimizer);  // throws for unknown names
  require(rows == RowUpdate::dense || c.optimizer == "adam" || c.optimizer == "adamw",
          "--embedding-optimizer " + c.embedding_optimizer + " needs --optimizer adam or adamw (it "
          "updates the tables' rows; the other layers keep the optimizer), not " + c.optimizer);
  require(rows == RowUpdate::dense || c.engine == "data-parallel",
          "--embedding-optimizer " + c.embedding_optimizer + " needs the data-parallel engine (the "
          "sharded engine hands its optimizer dense shards)");
  require(rows != RowUpdate::rowwise_adagrad || c.weight_decay == 0,
          "--embedding-optimizer rowwise-adagrad takes no weight decay; set --weight-decay 0");
  require(std::isfinite(c.embedding_lr) && c.embedding_lr >= 0 && c.embedding_lr <= kFloatMax,
          "--embedding-lr must be a number in [0, 3.4e38] (0: --lr), not " + format_value(c.embedding_lr));
  require(c.epochs >= 1, "--epochs must be at least 1");
  require(c.batch >= 1 && c.batch <= 65536, "--batch must be in 1..65536 (samples per rank)");
  require(c.bucket_cap_bytes >= 4 && c.first_bucket_bytes >= 4, "bucket caps must be at least 4 bytes");
  if (c.buckets.rfind("groups:", 0) == 0) {
    parse_group_sizes(c.buckets.substr(7));  // throws naming the bad entry
  } else {
    require(contains_name({"ddp", "layerwise", "one", "mergecomp"}, c.buckets),
            "unknown --buckets '" + c.buckets + "'; choose one of " + joined_names(bucket_policy_names()));
  }
  require(c.plan_steps >= 2 && c.plan_steps <= 1000,
          "--plan-steps must be in 2..1000 (the first step is not profiled)");
  require(c.plan_max_groups >= 1 && c.plan_max_groups <= 64, "--plan-groups must be in 1..64");
  require(c.plan_alpha >= 0 && c.plan_alpha < 1, "--plan-alpha must be in [0, 1)");
  require(std::isfinite(c.plan_link_rate) && c.plan_link_rate >= 0,
          "--link-rate must be a positive rate (or 0: the measured one)");
  require(!c.plan_only || c.buckets == "mergecomp", "planning needs --buckets mergecomp");
  require(!c.plan_only || c.max_steps_per_epoch == 0 ||
              c.max_steps_per_epoch * static_cast<std::size_t>(c.epochs) >= c.plan_steps,
          "--plan-steps " + std::to_string(c.plan_steps) + " needs at least that many steps; " +
              "raise --max-steps-per-epoch or lower --plan-steps");
  require(c.threads >= 1 && c.threads <= 256, "--threads must be in 1..256");
  require(!c.resume || !c.checkpoint_dir.empty(), "--resume needs --checkpoint-dir");
  require(c.checkpoint_every == 0 || !c.checkpoint_dir.empty(),
          "--checkpoint-every needs --checkpoint-dir");
  require(c.max_skipped_consecutive >= 1 && c.max_skipped_total >= 1,
          "--max-skipped-consecutive and --max-skipped-total must be at least 1");
}

}  // namespace qccl::engines
