#include "qccl/codecs/codec.h"

#include <algorithm>
#include <cmath>

#include "qccl/collectives/allgather.h"
#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/collectives/decode_sum.h"
#include "qccl/collectives/reduce_scatter.h"
#include "qccl/collectives/validate.h"
#include "qccl/codecs/group_data_path.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

// The per-rank slot of the step's exchange that carries the preparation's
// shared value (StepPreparation::shared); slot 0 holds the squared 2-norm
// (norm_statistics).
constexpr std::size_t kSharedValue = 1;

// A process group cannot reduce encodings that combine hop by hop: their
// allreduce and reduce-scatter are refused on every rank alike (the
// encoding follows from the exchanged norm), before anything moves, so the
// communicator stays usable.
void refuse_what_a_group_cannot_carry(Communicator& comm, CodecOperation kind, Encoding& encoding,
                                      bool gathered, const std::string& codec) {
  if (kind == CodecOperation::allgather || group_collectives(comm) == nullptr) return;
  if (const std::string refusal = group_refusal(encoding, gathered, codec); !refusal.empty()) {
    throw InvalidArgument(refusal);
  }
}

}  // namespace

std::string_view to_string(CodecOperation operation) {
  switch (operation) {
    case CodecOperation::allreduce_mean: return "allreduce mean";
    case CodecOperation::reduce_scatter_mean: return "reduce-scatter mean";
    case CodecOperation::allgather: return "allgather";
  }
  return "unknown";
}

std::vector<Range> Codec::reduce_scatter_blocks(std::size_t count, int ranks) const {
  return qccl::reduce_scatter_blocks(count, ranks, granularity());
}

bool CodecOperations::has(CodecOperation operation) const {
  switch (operation) {
    case CodecOperation::allreduce_mean: return allreduce_mean;
    case CodecOperation::reduce_scatter_mean: return reduce_scatter_mean;
    case CodecOperation::allgather: return allgather;
  }
  return false;
}

std::unique_ptr<Encoding> Codec::encoding_for(double norm, int ranks, int rank,
                                               Algorithm algorithm, std::span<const float> input) {
  StepSetup setup = step_setup(CodecOperation::allreduce_mean, algorithm, ranks, rank);
  setup.norm = norm;
  setup.input = input;
  setup.input_length = input.size();
  return step_encoding(setup);
}

StepSetup Codec::step_setup(CodecOperation operation, Algorithm algorithm, int ranks,
                            int rank) const {
  StepSetup setup;
  setup.operation = operation;
  setup.algorithm = algorithm;
  setup.ranks = ranks;
  setup.rank = rank;
  setup.summed = operation == CodecOperation::allgather ? 1 : ranks;
  setup.step = step_;
  return setup;
}

std::size_t Codec::wire_bytes(std::size_t count) const {
  return bounds({.count = count}).wire_bytes;
}

double Codec::max_abs_error(double inf_norm, int ranks, Algorithm algorithm) const {
  return bounds({.inf_norm = inf_norm, .ranks = ranks, .algorithm = algorithm}).max_abs_error;
}

std::optional<double> Codec::variance_bound(double squared_norm, std::size_t d, int ranks,
                                            Algorithm algorithm) const {
  return bounds({.count = d, .squared_norm = squared_norm, .ranks = ranks, .algorithm = algorithm})
      .variance;
}

double Codec::error_bound(double inf_norm, int ranks, Algorithm algorithm,
                          CodecOperation operation) const {
  return max_abs_error(inf_norm, operation == CodecOperation::allgather ? 1 : ranks, algorithm);
}

std::string Codec::layout_digest(const StepSetup& setup) const {
  if (setup.operation == CodecOperation::allgather || layout_.unnamed()) return {};
  return " tensors#" + std::to_string(layout_.fingerprint());
}

StepPreparation Codec::layout_preparation(const StepSetup& setup) const {
  if (setup.operation != CodecOperation::allgather) layout_.check(setup.input.size(), step_name());
  return {layout_digest(setup)};
}

std::string Codec::step_name() const {
  return spec() + " step " + std::to_string(step_) + " bucket " + std::to_string(settings_.bucket);
}

void Codec::check_supported(CodecOperation operation) const {
  if (supports(operation)) return;
  std::string offered;
  for (auto op : {CodecOperation::allreduce_mean, CodecOperation::reduce_scatter_mean,
                  CodecOperation::allgather}) {
    if (supports(op)) offered += (offered.empty() ? "" : ", ") + std::string(to_string(op));
  }
  throw InvalidArgument("codec " + spec() + " has no " + std::string(to_string(operation)) +
                        "; it offers " + offered);
}

void Codec::allreduce_mean(Communicator& comm, std::span<float> data,
                           const CollectiveOptions& options, std::span<float> own) {
  check_supported(CodecOperation::allreduce_mean);
  validate_options(options, "allreduce mean");
  if (!own.empty()) check_same_length(data.size(), own.size(), "allreduce mean (own contribution)");
  run_operation(comm, {CodecOperation::allreduce_mean, data, data, {}, own, false, {}}, options);
  ++step_;
}

void Codec::allreduce_mean_sparse(Communicator& comm, std::span<float> data,
                                  std::span<const Range> support,
                                  const CollectiveOptions& options) {
  check_supported(CodecOperation::allreduce_mean);
  validate_options(options, "allreduce mean");
  std::size_t end = 0;  // of the previous range
  for (std::size_t k = 0; k < support.size(); ++k) {
    const Range& r = support[k];
    const bool inside = r.first <= data.size() && r.count <= data.size() - r.first;
    if (inside && r.first >= end) {
      end = r.end();
      continue;
    }
    throw InvalidArgument(spec() + " sparse allreduce mean: support range " + std::to_string(k) +
                          " [" + std::to_string(r.first) + ", " + std::to_string(r.end()) +
                          ") " + (inside ? "starts before the end of the previous one"
                                         : "goes beyond the data's " +
                                               std::to_string(data.size()) + " elements") +
                          "; give sorted, disjoint ranges inside the data");
  }
  Operation operation{CodecOperation::allreduce_mean, data, data, {}, {}, true, support};
  run_operation(comm, operation, options);
  ++step_;
}

void Codec::reduce_scatter_mean(Communicator& comm, std::span<const float> input,
                                std::span<float> output, const CollectiveOptions& options,
                                std::span<float> own) {
  constexpr std::string_view op = "reduce-scatter mean";
  check_supported(CodecOperation::reduce_scatter_mean);
  validate_options(options, op);
  const auto blocks = checked_blocks(comm, input.size(), output.size());
  check_no_partial_overlap(input, output, op);
  if (!own.empty()) check_same_length(input.size(), own.size(), "reduce-scatter mean (own contribution)");
  run_operation(comm, {CodecOperation::reduce_scatter_mean, input, output, blocks, own, false, {}},
                options);
  ++step_;
}

std::vector<Range> Codec::checked_blocks(const Communicator& comm, std::size_t count,
                                         std::size_t output_count) const {
  auto blocks = reduce_scatter_blocks(count, comm.size());
  const Range mine = blocks[static_cast<std::size_t>(comm.rank())];
  if (output_count != mine.count) {
    throw InvalidArgument(spec() + " reduce-scatter mean: rank " + std::to_string(comm.rank()) +
                          "'s block has " + std::to_string(mine.count) + " elements but output has " +
                          std::to_string(output_count) + " (see Codec::reduce_scatter_blocks)");
  }
  return blocks;
}

void Codec::allgather(Communicator& comm, std::span<const float> shard, std::span<float> output,
                      const CollectiveOptions& options, std::span<float> own) {
  const std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()), shard.size());
  allgatherv(comm, shard, counts, output, options, own);
}

void Codec::allgatherv(Communicator& comm, std::span<const float> shard,
                       std::span<const std::size_t> counts, std::span<float> output,
                       const CollectiveOptions& options, std::span<float> own) {
  constexpr std::string_view op = "allgather";
  check_supported(CodecOperation::allgather);
  validate_options(options, op);
  try {
    check_allgather_arguments(shard.size(), output.size(), counts, comm.size(), comm.rank(),
                              "elements");
  } catch (const InvalidArgument&) {
    rethrow_with_context(spec() + " ");
  }
  if (!own.empty()) check_same_length(shard.size(), own.size(), "allgather (own contribution)");
  const auto shards = ranges_from_counts(counts);
  run_operation(comm, {CodecOperation::allgather, shard, output, shards, own, false, {}}, options);
  ++step_;
}

// The three-part step (see codec.h): local statistics, one exchange that
// checks the call and combines them, then the reduction, the collective
// and the completion.
void Codec::run_operation(Communicator& comm, const Operation& operation,
                          const CollectiveOptions& options) {
  if (options.algorithm == Algorithm::hierarchical) {
    run_hierarchical(comm, operation, options);
    return;
  }
  StepSetup setup = step_setup(operation.kind, options.algorithm, comm.size(), comm.rank());
  setup.input = operation.input;
  setup.input_length = operation.input.size();
  setup.pieces = operation.pieces;
  if (options.algorithm == Algorithm::native && !has_native_equivalent()) {
    throw InvalidArgument(spec() + ": algorithm native runs only codecs MPI can sum (fp32, "
                          "fp16); use ring or halving-doubling");
  }
  // 1. Local checks and what the exchange carries, and 2. the exchange,
  // the encoding and the collective.
  const StepPreparation preparation = prepare(comm, setup, operation, options);
  const std::size_t elements = operation.kind == CodecOperation::allgather ? operation.output.size()
                                                                           : operation.input.size();
  CollectiveCall call =
      begin_step(comm, setup, local_statistic(operation), elements, options, preparation);
  // Building the encoding is where codecs select or scale from the whole
  // input (Top-k, DGC, the per-tensor levels): it counts as encoding.
  std::unique_ptr<Encoding> encoding;
  {
    PhaseScope timed(options.phases, &PhaseTimes::encode);
    encoding = step_encoding(setup);
  }
  if (encoding) {
    refuse_what_a_group_cannot_carry(comm, operation.kind, *encoding,
                                     traits().aggregation == Aggregation::allgather_decode, spec());
    call.move([&](int tag) { move_data(comm, tag, setup, *encoding, operation, options); });
  } else {  // every rank's input is zero, and every rank knows it
    std::fill(operation.output.begin(), operation.output.end(), 0.0f);
    std::fill(operation.own.begin(), operation.own.end(), 0.0f);
  }
  // 3. Completion.
  complete_step(setup, encoding.get(), operation);
}

// The norm statistic of this rank's input. The ∞-norm of input that is
// zero outside its support is the largest over the support's ranges; the
// squared 2-norm is summed in blocks whose rounding depends on where they
// start, so it reads the whole input, for the same bits as without support.
double Codec::local_statistic(const Operation& operation) const {
  if (!operation.has_support || norm_kind() != NormKind::inf) {
    return local_norm_statistic(operation.input, norm_kind());
  }
  double largest = 0;
  for (const Range& r : operation.support) {
    const double part = local_norm_statistic(operation.input.subspan(r.first, r.count), norm_kind());
    if (std::isnan(part)) return part;
    largest = std::max(largest, part);
  }
  return largest;
}

CollectiveCall Codec::begin_step(Communicator& comm, StepSetup& setup, double statistic,
                                 std::size_t element_count, const CollectiveOptions& options,
                                 const StepPreparation& preparation) const {
  const NormKind kind = norm_kind();
  CallStatistics local = norm_statistics(statistic, kind);
  local.per_rank[kSharedValue] = preparation.shared;
  Fingerprint fingerprint(to_string(setup.operation));
  fingerprint.add_text("algorithm", to_string(setup.algorithm))
      .add("element count", static_cast<std::int64_t>(element_count))
      .add("blocks or shards", hash62(range_counts(setup.pieces)))
      .add_text("codec", spec() + preparation.digest);
  CollectiveCall call(comm, std::move(fingerprint), comm.timeout(options.timeout), &local);
  setup.norm = global_norm(call.statistics(), kind, step_name());
  setup.shared_values.clear();
  for (const auto& row : call.statistics().per_rank) setup.shared_values.push_back(row[kSharedValue]);
  return call;
}

void Codec::sum_to_mean(const StepSetup& setup, const Operation& operation) {
  if (setup.summed == 1) return;
  const auto n = static_cast<float>(setup.summed);
  for (float& x : operation.output) x /= n;
}

void Codec::move_data(Communicator& comm, int tag, const StepSetup& setup, Encoding& encoding,
                      const Operation& operation, const CollectiveOptions& options) {
  default_move_data(comm, tag, setup, encoding, operation, options);
}

Reduction& Codec::in_transit(Encoding& encoding) const {
  Reduction* reduction = encoding.in_transit();
  if (reduction == nullptr) {
    throw Error(step_name() + ": the step's encoding '" + encoding.name() +
                "' has no in-transit reduction, but the codec combines it in transit (a bug "
                "in the codec: report it)");
  }
  return *reduction;
}

// Compressed-domain codecs reduce hop by hop, which needs their encoding's
// in-transit combining; the others gather, decode and add.
void Codec::default_move_data(Communicator& comm, int tag, const StepSetup& setup,
                              Encoding& encoding, const Operation& operation,
                              const CollectiveOptions& options) {
  const CodecTraits traits = this->traits();
  const int divide_by = traits.means_of_decoded_values ? setup.summed : 1;
  if (GroupCollectives* group = group_collectives(comm)) {  // a caller's process group
    group_move_data(comm, *group, setup.operation, encoding,
                    traits.aggregation == Aggregation::allgather_decode, spec(), encoding,
                    operation.input, operation.pieces, operation.output, operation.own, divide_by,
                    comm.timeout(options.timeout));
    return;
  }
  Reduction* reduction = nullptr;
  if (traits.aggregation == Aggregation::compressed_domain) reduction = &in_transit(encoding);
  switch (setup.operation) {
    case CodecOperation::allreduce_mean:
      if (reduction) {
        allreduce_body(comm, tag, operation.input, operation.output, *reduction, options,
                       operation.own);
      } else {
        allreduce_by_allgather_body(comm, tag, operation.input, operation.output, encoding,
                                    options, operation.own, divide_by);
      }
      return;
    case CodecOperation::reduce_scatter_mean:
      if (reduction) {
        reduce_scatter_body(comm, tag, operation.input, operation.pieces, operation.output,
                            *reduction, options, operation.own);
      } else {
        reduce_scatter_by_exchange_body(comm, tag, operation.input, operation.pieces,
                                        operation.output, encoding, options, operation.own,
                                        divide_by);
      }
      return;
    case CodecOperation::allgather:
      allgather_body(comm, tag, operation.input, operation.pieces, operation.output, encoding,
                     options, operation.own);
      return;
  }
}

void Codec::set_layout(TensorLayout layout, std::shared_ptr<TensorStateStore> store) {
  layout_ = std::move(layout);
  if (store) {
    store_ = std::move(store);
    owns_store_ = false;
  }
}

std::vector<std::byte> Codec::save_state() const {
  if (!owns_store_ || store_->size() == 0) return {};
  return store_->save();
}

void Codec::load_state(std::span<const std::byte> state) {
  if (state.empty()) {
    if (owns_store_) store_->clear();
    return;
  }
  if (!owns_store_) {
    throw InvalidArgument("codec " + spec() + " keeps no state of its own (its tensors' state is "
                          "in a shared store), but was given " + std::to_string(state.size()) +
                          " bytes of it: the checkpoint was written with another codec");
  }
  try {
    store_->load(state);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument("codec " + spec() + " cannot load the " + std::to_string(state.size()) +
                          " bytes of state it was given (was the checkpoint written with another "
                          "codec?): " + e.what());
  }
}

void feed_sgd_step(Codec& codec, std::span<const float> result, double step_size) {
  StepFeedback* feedback = codec.step_feedback();
  if (feedback == nullptr) return;
  std::vector<float> update(result.size());
  const auto eta = static_cast<float>(step_size);
  for (std::size_t i = 0; i < result.size(); ++i) update[i] = -eta * result[i];
  feedback->observe_step(step_size, update);
}

}  // namespace qccl
