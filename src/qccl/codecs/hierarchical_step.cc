// A codec's operations with the hierarchical algorithm
// (collectives/hierarchical.h): fp32 within hosts, the codec across them.
//
// The step's exchange runs over every rank, as in the flat step: the call
// check, the global norm, and a NonFiniteError on every rank alike. For the
// means, the codec's inputs across hosts are the H host means, which that
// norm bounds too: every element of a mean is at most the largest input
// element, and a mean's 2-norm at most the largest input's. So the step's
// encoding is built for H ranks summing (StepSetup::ranks = H, with the
// integer headroom of Global-QSGD §4 for H contributions, not n), keyed by
// the host (StepSetup::rank) and by each element's place in the whole (or
// regrouped) vector (offset_encoding.h); the codec's mean over hosts of the
// host means is the mean over every rank. An allgather's shards are each one
// rank's, encoded once: they cross hosts encoded, one per host for each
// local rank, and are shared within the host decoded.
#include <cfloat>
#include <cmath>

#include "qccl/codecs/codec.h"
#include "qccl/collectives/hierarchical.h"
#include "qccl/collectives/offset_encoding.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

// Throws InvalidArgument, on every rank alike, unless `codec` can run the
// hierarchical algorithm: a codec with CodecTraits::host_means, no own
// contribution wanted, and native between hosts only for what MPI sums.
void refuse_unless_hierarchical(const Codec& codec, bool wants_own, Algorithm between) {
  if (!codec.traits().host_means) {
    throw InvalidArgument(codec.spec() + ": the hierarchical algorithm needs a codec whose "
                          "encoding it can build for host means (fp32, fp16, global-qsgd, qsgd, "
                          "natural); this one selects, scales or keeps state from each rank's "
                          "own input: use ring or halving-doubling");
  }
  if (wants_own) {
    throw InvalidArgument(codec.spec() + ": the hierarchical algorithm quantizes host means, so "
                          "no rank's own quantized input exists for error feedback: use ring or "
                          "halving-doubling with ef(...)");
  }
  if (between == Algorithm::native && !codec.has_native_equivalent()) {
    throw InvalidArgument(codec.spec() + ": native between hosts runs only codecs MPI can sum "
                          "(fp32, fp16); use ring or halving-doubling between hosts");
  }
}

}  // namespace

struct Codec::HierarchicalMove {
  Communicator& comm;
  HostGroups& groups;
  int tag;
  StepSetup& setup;
  Encoding& encoding;
  const Operation& operation;
  const CollectiveOptions& options;

  Timeout timeout() const { return comm.timeout(options.timeout); }
  // Summing L inputs near fp32's largest would overflow: they are scaled
  // by 1/L before the sum instead of after.
  bool prescale() const {
    return setup.norm * static_cast<double>(groups.local_size()) > FLT_MAX;
  }
};

// A host mean sums L values of magnitude at most `norm` (which bounds every
// element for either norm kind) in L−1 fp32 additions, each within 2^-24 of
// a partial sum of at most L·norm, then scales by an fp32 1/L: after the
// scaling, within (L+1)·2^-24·norm of the exact mean; the codec's mean over
// hosts of such perturbed inputs errs by no more than they do, plus its own
// bound for H ranks. The factor L more is slack for the rounding of 1/L.
double Codec::hierarchical_error_bound(double norm, int hosts, int ranks_per_host,
                                       Algorithm between, CodecOperation operation) const {
  if (operation == CodecOperation::allgather) return error_bound(norm, hosts, between, operation);
  const double local = ranks_per_host;
  return error_bound(norm, hosts, between, operation) +
         (local + 1) * local * std::ldexp(norm, -24);
}

void Codec::run_hierarchical(Communicator& comm, const Operation& operation,
                             const CollectiveOptions& options) {
  refuse_unless_hierarchical(*this, !operation.own.empty(), options.between_hosts);
  const CollectiveOptions across = between_hosts_options(options);
  StepSetup setup = step_setup(operation.kind, Algorithm::hierarchical, comm.size(), comm.rank());
  setup.input = operation.input;
  setup.input_length = operation.input.size();
  setup.pieces = operation.pieces;
  StepPreparation preparation = prepare(comm, setup, operation, options);
  preparation.digest += " between hosts " + std::string(to_string(across.algorithm));
  if (operation.kind == CodecOperation::allreduce_mean) {
    preparation.digest += " in parts of " + std::to_string(options.host_part_bytes) + " bytes";
  }
  const bool gather = operation.kind == CodecOperation::allgather;
  CollectiveCall call =
      begin_step(comm, setup, local_statistic(operation),
                 gather ? operation.output.size() : operation.input.size(), options, preparation);
  // Every rank is in this call now (the exchange checked it): the levels can
  // be split off, collectively, on the first one.
  HostGroups& groups = comm.host_groups();
  setup.algorithm = across.algorithm;
  setup.ranks = groups.hosts();
  setup.summed = gather ? 1 : groups.hosts();
  setup.rank = groups.host();
  setup.input = {};
  setup.input_length = 0;
  setup.pieces = {};
  std::unique_ptr<Encoding> encoding;
  {
    PhaseScope timed(options.phases, &PhaseTimes::encode);
    encoding = step_encoding(setup);
  }
  if (!encoding) {  // every rank's input is zero, and every rank knows it
    std::fill(operation.output.begin(), operation.output.end(), 0.0f);
  } else {
    call.move([&](int tag) {
      const HierarchicalMove move{comm, groups, tag, setup, *encoding, operation, across};
      switch (operation.kind) {
        case CodecOperation::allreduce_mean: move_hierarchical_mean(move); return;
        case CodecOperation::reduce_scatter_mean: move_hierarchical_reduce_scatter(move); return;
        case CodecOperation::allgather: move_hierarchical_allgather(move); return;
      }
    });
  }
  complete_step(setup, encoding.get(), operation);
}

// Host means of this rank's 1/L slice, the codec's mean of it across hosts,
// and the slices shared within the host; pipelined over parts of the vector
// (host_pipeline.h). The encoding is keyed by each element's place in the
// whole vector, so the parts change which rank carries an element across
// hosts, not how it is encoded.
void Codec::move_hierarchical_mean(const HierarchicalMove& move) {
  const Operation& operation = move.operation;
  allreduce_in_host_parts(
      move.comm, operation.input, operation.output,
      1.0f / static_cast<float>(move.groups.local_size()), move.prescale(),
      move.options.host_part_bytes, granularity(),
      [&](std::span<float> mean, std::size_t first) {
        const auto sliced = offset_encoding(move.encoding, first);
        const Operation part{operation.kind, mean, mean, {}, {}, false, {}};
        default_move_data(move.groups.across(), move.tag, move.setup, *sliced, part,
                          move.options);
      },
      move.timeout());
}

// The blocks regrouped by local rank (hierarchical.h): host means of this
// rank's region — its block and those of the same local rank on the other
// hosts — then the codec's reduce-scatter of the region across hosts, which
// leaves this rank its own block.
void Codec::move_hierarchical_reduce_scatter(const HierarchicalMove& move) {
  const Operation& operation = move.operation;
  HostGroups& groups = move.groups;
  const HostLayout& layout = groups.layout();
  const HostRegions regions = regroup_by_local_rank(layout, operation.pieces);
  const float scale = 1.0f / static_cast<float>(groups.local_size());
  const bool prescale = move.prescale();
  const std::span<float> regrouped =
      move.comm.float_scratch(Scratch::work, operation.input.size());
  regroup(operation.input, operation.pieces, regions, prescale ? scale : 1.0f, regrouped);
  const Range mine = regions.regions[static_cast<std::size_t>(groups.local_rank())];
  const std::span<float> mean = move.comm.float_scratch(Scratch::decoded, mine.count);
  sum_within_host(groups, regrouped, regions.regions, prescale ? 1.0f : scale, false, mean, {},
                  move.timeout());
  const auto pieces = regions.across_pieces(groups.local_rank(), layout);
  const auto sliced = offset_encoding(move.encoding, mine.first);
  const Operation part{operation.kind, mean, operation.output, pieces, {}, false, {}};
  default_move_data(groups.across(), move.tag, move.setup, *sliced, part, move.options);
}

// Each rank's shard encoded once and gathered, decoded, by the ranks of its
// local rank on every host (one region of the regrouped output); the
// regions shared within the host, then put back in rank order.
void Codec::move_hierarchical_allgather(const HierarchicalMove& move) {
  const Operation& operation = move.operation;
  HostGroups& groups = move.groups;
  const HostLayout& layout = groups.layout();
  const HostRegions regions = regroup_by_local_rank(layout, operation.pieces);
  const Range mine = regions.regions[static_cast<std::size_t>(groups.local_rank())];
  const std::span<float> region = move.comm.float_scratch(Scratch::decoded, mine.count);
  const auto pieces = regions.across_pieces(groups.local_rank(), layout);
  const auto sliced = offset_encoding(move.encoding, mine.first);
  const Operation part{operation.kind, operation.input, region, pieces, {}, false, {}};
  default_move_data(groups.across(), move.tag, move.setup, *sliced, part, move.options);
  const std::span<float> regrouped =
      move.comm.float_scratch(Scratch::work, operation.output.size());
  gather_within_host(groups, region, regions.regions, regrouped, move.timeout());
  ungroup(regrouped, regions, operation.pieces, operation.output);
}

}  // namespace qccl
