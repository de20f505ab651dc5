// A codec's allreduce mean with the hierarchical algorithm
// (collectives/hierarchical.h): fp32 within hosts, the codec across them.
//
// The step's exchange runs over every rank, as in the flat step: the call
// check, the global norm, and a NonFiniteError on every rank alike. Across
// hosts the codec's inputs are the H host means, which that norm bounds
// too: every element of a mean is at most the largest input element, and a
// mean's 2-norm at most the largest input's. So the step's encoding is
// built for H ranks summing (StepSetup::ranks = H, with the integer
// headroom of Global-QSGD §4 for H contributions, not n), keyed by the host
// (StepSetup::rank) and by each element's place in the whole vector
// (offset_encoding.h); the codec's mean over hosts of the host means is the
// mean over every rank.
#include <cfloat>
#include <cmath>

#include "qccl/codecs/codec.h"
#include "qccl/collectives/hierarchical.h"
#include "qccl/collectives/offset_encoding.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

std::span<float> float_scratch(Communicator& comm, Scratch which, std::size_t count) {
  return {reinterpret_cast<float*>(comm.scratch(which, count * sizeof(float)).data()), count};
}

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

// A host mean sums L values of magnitude at most `norm` (which bounds every
// element for either norm kind) in L−1 fp32 additions, each within 2^-24 of
// a partial sum of at most L·norm, then scales by an fp32 1/L: after the
// scaling, within (L+1)·2^-24·norm of the exact mean; the codec's mean over
// hosts of such perturbed inputs errs by no more than they do, plus its own
// bound for H ranks. The factor L more is slack for the rounding of 1/L.
double Codec::hierarchical_error_bound(double norm, int hosts, int ranks_per_host,
                                       Algorithm between) const {
  const double local = ranks_per_host;
  return error_bound(norm, hosts, between, CodecOperation::allreduce_mean) +
         (local + 1) * local * std::ldexp(norm, -24);
}

void Codec::run_hierarchical_mean(Communicator& comm, const Operation& operation,
                                  const CollectiveOptions& options) {
  refuse_unless_hierarchical(*this, !operation.own.empty(), options.between_hosts);
  const CollectiveOptions across = between_hosts_options(options);
  StepSetup setup = step_setup(operation.kind, Algorithm::hierarchical, comm.size(), comm.rank());
  setup.input = operation.input;
  StepPreparation preparation = prepare(comm, setup, operation, options);
  preparation.digest += " between hosts " + std::string(to_string(across.algorithm));
  CollectiveCall call = begin_step(comm, setup, local_statistic(operation),
                                   operation.input.size(), options, preparation);
  // Every rank is in this call now (the exchange checked it): the levels can
  // be split off, collectively, on the first one.
  HostGroups& groups = comm.host_groups();
  setup.algorithm = across.algorithm;
  setup.ranks = setup.summed = groups.hosts();
  setup.rank = groups.host();
  setup.input = {};
  std::unique_ptr<Encoding> encoding;
  {
    PhaseScope timed(options.phases, &PhaseTimes::encode);
    encoding = step_encoding(setup);
  }
  if (!encoding) {  // every rank's input is zero, and every rank knows it
    std::fill(operation.output.begin(), operation.output.end(), 0.0f);
  } else {
    call.move([&](int tag) {
      const auto slices = host_slices(operation.input.size(), groups.local_size(), granularity());
      const Range mine = slices[static_cast<std::size_t>(groups.local_rank())];
      const std::span<float> mean = float_scratch(comm, Scratch::decoded, mine.count);
      // Summing L inputs near fp32's largest would overflow: scale first.
      const double local_size = groups.local_size();
      const bool prescale = setup.norm * local_size > FLT_MAX;
      const std::span<float> scaled =
          prescale ? float_scratch(comm, Scratch::work, operation.input.size()) : std::span<float>{};
      const Timeout timeout = comm.timeout(options.timeout);
      sum_within_host(groups, operation.input, slices, static_cast<float>(1.0 / local_size),
                      prescale, mean, scaled, timeout);
      const auto sliced = offset_encoding(*encoding, mine.first);
      const Operation part{operation.kind, mean, mean, {}, {}, false, {}};
      default_move_data(groups.across(), tag, setup, *sliced, part, across);
      gather_within_host(groups, mean, slices, operation.output, timeout);
    });
  }
  complete_step(setup, encoding.get(), operation);
}

}  // namespace qccl
