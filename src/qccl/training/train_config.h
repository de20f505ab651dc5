// What `qccl train` runs and what it reports: the torch-free face of the
// training loop and its engines, so the command line and the tests that
// only parse settings never include libtorch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"
#include "qccl/common/export.h"
#include "qccl/models/model_config.h"

QCCL_API_BEGIN
namespace qccl::engines {

// The model's settings (model, data, sizes, seed) are ModelConfig's
// (models/model_config.h); the rest are the run's.
struct TrainConfig : ModelConfig {
  // data-parallel (replicas, gradient buckets) or sharded (QSDP: each rank
  // owns 1/n of every parameter and its optimizer state; sharded.h).
  std::string engine = "data-parallel";
  CodecSpec codec;                        // the gradients' codec (default fp32)
  // sharded: the codec of the weights each block gathers before its forward
  // and backward passes (QSDP §4.1, §5.1).
  CodecSpec weights_codec;                // default fp32
  Algorithm algorithm = Algorithm::ring;
  Algorithm between_hosts = Algorithm::ring;  // --algo hierarchical's second level
  std::string optimizer = "sgd";          // sgd | adam | adamw
  double lr = 0.05;                       // base learning rate
  std::string lr_schedule = "constant";   // constant | cosine | linear (lr_schedule.h)
  std::size_t warmup_steps = 0;
  double momentum = 0.9;                  // sgd
  double weight_decay = 0.0;              // sgd, adam: L2 term; adamw: decoupled
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // adam, adamw
  // How embedding tables with sparse gradients are updated (optimizers.h
  // RowUpdate): dense (as the optimizer above, every row), lazy-adam or
  // rowwise-adagrad (adam/adamw and the data-parallel engine only), at
  // embedding_lr (0: lr; scheduled like it).
  std::string embedding_optimizer = "dense";
  double embedding_lr = 0.0;
  int epochs = 1;
  std::size_t batch = 64;                 // samples per rank per step
  std::size_t max_steps_per_epoch = 0;    // 0: the whole training set each epoch
  // Which tensors are reduced together: ddp (the size-capped rule below),
  // layerwise, one, groups:N1,N2,.. (tensor counts in reverse registration
  // order) or mergecomp (profiled, then searched; merge_plan.h).
  std::string buckets = "ddp";
  std::size_t bucket_cap_bytes = std::size_t{25} << 20;
  std::size_t first_bucket_bytes = std::size_t{1} << 20;
  // mergecomp: steps profiled with the whole model in one bucket before the
  // plan is chosen, Algorithm 2's Y and α, and a link rate (bytes/s) to plan
  // for instead of the measured one (0: measured).
  std::size_t plan_steps = 5;
  std::size_t plan_max_groups = 2;
  double plan_alpha = 0.01;
  double plan_link_rate = 0;
  // Stop once the plan is chosen (qccl plan).
  bool plan_only = false;
  // Update each bucket's parameters as soon as its means arrive, while later
  // buckets are still exchanged (the same bits as one step after the last).
  bool overlap_updates = true;
  std::string checkpoint_dir;             // empty: no checkpoints
  std::size_t checkpoint_every = 0;       // steps; 0: only at the end
  bool resume = false;                    // continue from checkpoint_dir
  bool force = false;                     // replace an existing log / checkpoints
  std::string log_path;                   // JSON lines; empty: none
  bool skip_nonfinite = false;            // skip steps with NaN/Inf gradients
  // With skip_nonfinite: the run stops with a NonFiniteError when more
  // steps than these are skipped in a row, or over the whole run (a run
  // that diverged, not a rare spike).
  std::size_t max_skipped_consecutive = 3;
  std::size_t max_skipped_total = 10;
  // Compare the replicas' parameters across ranks every K steps (and after
  // every resume, before every checkpoint and at the end); 0: only then.
  std::size_t verify_every = 100;
  bool progress = true;                   // rank 0 draws a progress bar on stderr
  int threads = 1;                        // libtorch intra-op threads per rank
  // Keep the final parameters in the summary (tests compare runs).
  bool return_parameters = false;
  // Measure how wide each weight matrix's values spread at the end:
  // TrainSummary::weight_ranges.
  bool report_weight_ranges = false;
  // After the last epoch, evaluate also the weights the oracles compute
  // with where the engine has others than its parameters (sharded with a
  // quantizing weights codec: QSDP's Q^w(W)): final_computed_metric.
  bool evaluate_computed_weights = false;
  // Stop after this many steps of this invocation (a checkpoint is saved
  // if checkpoint_dir is set); 0: no limit.
  std::size_t stop_after_steps = 0;
};

// Seconds per step, the median over the steps run of each part. The
// training thread's time is data + compute + waiting + optimizer (their sum
// is about the step time);
// encode, communicate and decode are the communication thread's time, which
// overlaps compute (backward fills buckets while earlier ones are reduced).
struct StepSplit {
  double data = 0, compute = 0, waiting = 0, optimizer = 0;
  double encode = 0, communicate = 0, decode = 0;
  // Minor page faults per step (medians too): the training thread's over
  // the whole step, the part of them in the optimizer step, and the
  // communication thread's. A steady-state step takes (near) none: every
  // buffer it needs was allocated by the first steps and is reused.
  double faults = 0, optimizer_faults = 0, communication_faults = 0;
};

// Minor page faults per step, both threads, over the second half of the
// steps run (the first steps allocate what every later step reuses).
struct SteadyFaults {
  std::size_t steps = 0;
  double mean = 0, max = 0;
};

// One weight matrix's spread at the end of a run: its range (max − min)
// over the spread of its bulk, σ_bulk = 1.4826·median|w − median(w)| (the
// median absolute deviation, which is σ for normal values and which a few
// outliers do not inflate as they do the standard deviation). Normal values
// give about 2·√(2·ln d), uniform ones 2.7; a few outlier rows make it as
// many times wider as they are larger, and a quantizer with one range for
// the matrix has a step of range/(2^bits − 1), that many times coarser
// against the bulk (QSDP §6's case for buckets).
struct WeightRange {
  std::string name;
  std::size_t elements = 0;
  double range_over_bulk_sd = 0;
};

struct EpochResult {
  int epoch = 0;
  double train_loss = 0;  // mean over the epoch's steps and ranks
  double test_loss = 0;
  double test_metric = 0;  // accuracy in [0,1], or perplexity for char-lstm
  double seconds = 0;
};

// A partition's predicted step time (MergeComp's model, merge_plan.h).
struct PlanPrediction {
  std::string name;                  // mergecomp, layerwise, one, ddp
  std::vector<std::size_t> groups;   // tensor counts, reverse registration order
  double seconds = 0;
};

// What the MergeComp scheduler measured and chose.
struct PlanReport {
  std::size_t profiled_steps = 0, tensors = 0;
  double backward_seconds = 0, optimizer_seconds = 0, other_seconds = 0;  // profile medians
  double codec_fixed = 0, codec_per_element = 0;  // h(x) = B_h + γ_h·x, s
  double communication_fixed = 0, communication_per_element = 0;  // g(x)
  double reduction_per_element = 0;  // of g's γ_g, the CPU's (in-transit reductions)
  double wire_bytes_per_element = 0, link_bytes_per_second = 0;
  std::vector<double> best_by_groups;  // F_min(y), y = 1, 2, ..
  std::vector<PlanPrediction> predictions;  // the choice first, then the named plans
  double search_seconds = 0;  // cost measurement and search
};

struct TrainSummary {
  std::string model, data, codec;
  std::string engine = "data-parallel", weights_codec;  // weights_codec: sharded only
  int ranks = 0;
  std::string metric_name;  // "accuracy" or "perplexity"
  double final_metric = 0, final_test_loss = 0;
  // The metric of the weights the oracles compute with (see
  // evaluate_computed_weights); NaN where not evaluated or the engine
  // computes with its parameters.
  double final_computed_metric = std::numeric_limits<double>::quiet_NaN();
  double wall_seconds = 0;  // this invocation, evaluation included
  std::size_t steps = 0;    // steps run by this invocation
  std::size_t skipped_steps = 0;
  double steps_per_second = 0, samples_per_second = 0;
  StepSplit split;
  SteadyFaults steady_faults;
  std::size_t parameters = 0, buckets = 0;
  std::string bucket_policy;  // the layout's policy at the end ("groups:3,40" after planning)
  std::optional<PlanReport> plan;  // with buckets = mergecomp, once planned in this invocation
  double payload_bytes_per_step = 0;  // one rank's encoded gradient
  // Bytes rank 0 sent per step, counted by the transport (mean over steps);
  // unset for algorithm native, whose traffic MPI does not expose.
  std::optional<double> sent_bytes_per_step;
  double compression_ratio = 0;       // fp32 bytes / payload bytes
  // The largest peak resident memory of any rank's process over the
  // training steps (Linux's VmHWM, reset when each epoch's steps begin, so
  // evaluation's larger batches do not mask it); ranks that are threads of
  // one process share it.
  std::uint64_t peak_rss_bytes = 0;
  std::vector<EpochResult> epochs;
  std::vector<float> final_parameters;  // with return_parameters
  std::vector<WeightRange> weight_ranges;  // with report_weight_ranges: every 2-D parameter
};

std::vector<std::string> optimizer_names();
std::vector<std::string> engine_names();  // data-parallel, sharded
// The codecs an engine runs when none is named: fp32 for data parallel;
// QSDP's W8G8 for sharded (QSDP §6: 8-bit bucketed min-max weights on the
// shifted lattice, 8-bit stochastic gradients).
struct EngineCodecs {
  std::string gradients;
  std::string weights;
};
EngineCodecs default_codecs(const std::string& engine);
std::vector<std::string> bucket_policy_names();  // ddp, layerwise, one, groups:.., mergecomp
// The bucket settings in words, for checks across ranks and checkpoints:
// "ddp: cap 26214400 B, first 1048576 B", "mergecomp: 5 steps profiled, ...".
std::string bucket_settings(const TrainConfig& config);

// The engine and codecs in words, for checks across ranks and checkpoints:
// the gradients' canonical codec spec (data parallel), or "sharded, weights
// SPEC, gradients SPEC".
std::string exchange_settings(const TrainConfig& config);
// The embedding tables' optimizer in words, appended to the optimizer's:
// "" when it is the default (so older checkpoints still match), else
// " embeddings=lazy-adam lr=0.01".
std::string embedding_optimizer_text(const TrainConfig& config);

// Checks the settings on this rank alone (names, ranges, model/data pairs,
// codec spec); throws InvalidArgument naming the setting and what is valid.
void validate(const TrainConfig& config);

// A file or directory a run writes: the log and the summary (rank 0), the
// checkpoint directory (every rank).
struct OutputPath {
  enum class Kind { replaced, appended, directory };
  std::string path, what;  // what: "the log", "--checkpoint-dir", ...
  Kind kind = Kind::replaced;
  bool every_rank = false;
};
// The log and checkpoint directory of `config` (those set).
std::vector<OutputPath> outputs_of(const TrainConfig& config);
// Refuses, before any step, outputs that alias one another or the
// checkpoint (output_aliases.h), and outputs that cannot be written: each
// rank checks those it writes, and when any check failed every rank throws
// InvalidArgument naming the path. Leaves no file behind (a checkpoint
// directory is created).
void check_outputs(Communicator& comm, const std::vector<OutputPath>& outputs);

// Trains on every rank of `comm` (all ranks call it with the same settings;
// differing settings give a MismatchError on every rank before any step).
// Rank 0 prints progress to stderr and writes the log and manifest.
TrainSummary train(Communicator& comm, const TrainConfig& config);

}  // namespace qccl::engines
QCCL_API_END
