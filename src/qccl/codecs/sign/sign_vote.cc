#include "qccl/codecs/sign/sign_vote.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "qccl/codecs/sign/sign_bits.h"
#include "qccl/codecs/sign/sign_levels_encoding.h"
#include "qccl/codecs/sign/vote_count_reduction.h"
#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/reduce_scatter.h"

namespace qccl {

bool votes_counted_in_transit(int ranks) {
  const int counter_bits = 8 * static_cast<int>(vote_counter_bytes(ranks));
  return ranks > 2 * counter_bits;
}

namespace {

constexpr std::string_view kMomentumField = "signum.momentum";

// signsgd (no momentum) and signum (a momentum beta): one vote, see the
// header.
class SignVoteCodec final : public Codec {
 public:
  SignVoteCodec(std::optional<double> momentum, CodecSettings settings)
      : Codec(settings), momentum_(momentum) {}

  std::string spec() const override {
    return momentum_ ? "signum:momentum=" + format_number(*momentum_) : "signsgd";
  }
  // Aggregation: the path up to 16 ranks; beyond, the vote is counted in
  // transit (votes_counted_in_transit). Whole bytes of bits per
  // reduce-scatter block. SigNUM's momentum follows the whole vector: no
  // allgather.
  CodecTraits traits() const override {
    return {.unbiased = false,
            .aggregation = Aggregation::allgather_decode,
            .granularity = 8,
            .operations = {.allgather = !momentum_}};
  }
  // One bit per element: what each rank sends as its vote (the in-transit
  // count sends int8 counters instead, 2(n-1)/n bytes per element). The
  // vote is a direction in {-1, 0, +1}, not an approximation of the mean:
  // no error bound.
  CodecBounds bounds(const BoundsQuery& q) const override { return {.wire_bytes = sign_bytes(q.count)}; }

 protected:
  // SigNUM's data must cover its layout, and each tensor its momentum
  // (TensorStateStore throws if a tensor changed size): checked on every
  // rank before anything is exchanged.
  StepPreparation prepare(Communicator&, const StepSetup& setup, const Operation&,
                          const CollectiveOptions&) override {
    if (!momentum_) return {};
    layout().check(setup.input.size(), step_name());
    for (const TensorSlice& t : layout().tensors(setup.input.size())) {
      state_store().floats(t.name, kMomentumField, t.elements);
    }
    return {};
  }

  // Bits for an allgather, and for a vote gathered as bits; +/-1 counters
  // for a vote counted in transit. Never null: an all-zero input votes +1.
  std::unique_ptr<Encoding> step_encoding(const StepSetup& setup) override {
    if (counts_in_transit(setup)) return make_vote_count_reduction(spec(), setup.ranks);
    SignLevelsSetup signs;
    signs.name = spec();
    return make_sign_levels_encoding(std::move(signs));
  }

  // The signs of this rank's input, or of its new momentum (kept aside
  // until the step completes), move by the path of this step's rank count.
  void move_data(Communicator& comm, int tag, const StepSetup& setup, Encoding& encoding,
                 const Operation& operation, const CollectiveOptions& options) override {
    Operation voted = operation;
    if (momentum_) {
      update_momentum(operation.input);
      voted.input = next_momentum_;
    }
    if (!counts_in_transit(setup)) {
      default_move_data(comm, tag, setup, encoding, voted, options);
    } else if (setup.operation == CodecOperation::allreduce_mean) {
      allreduce_body(comm, tag, voted.input, voted.output, in_transit(encoding), options,
                     voted.own);
    } else {
      reduce_scatter_body(comm, tag, voted.input, voted.pieces, voted.output,
                          in_transit(encoding), options, voted.own);
    }
  }

  // The output holds the vote counts sum_i sign(x_i) (gathered bits added
  // in rank order, or counted in transit): their signs are the vote. An
  // allgather's +/-1 values are left as they are. Then the momentum is kept.
  void complete_step(const StepSetup& setup, Encoding*, const Operation& operation) override {
    if (setup.operation != CodecOperation::allgather) {
      for (float& v : operation.output) v = v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : 0.0f;
    }
    if (!momentum_) return;
    for (const TensorSlice& t : layout().tensors(operation.input.size())) {
      const auto m = state_store().floats(t.name, kMomentumField, t.elements);
      std::copy_n(next_momentum_.begin() + static_cast<std::ptrdiff_t>(t.offset), t.elements,
                  m.begin());
    }
  }

 private:
  bool counts_in_transit(const StepSetup& setup) const {
    return setup.operation != CodecOperation::allgather && votes_counted_in_transit(setup.ranks);
  }

  // SigNUM's momentum, per tensor: m <- beta*m + (1 - beta)*g (Bernstein et
  // al. 2018b, Algorithm 1), starting from m = 0.
  void update_momentum(std::span<const float> g) {
    next_momentum_.resize(g.size());
    const auto beta = static_cast<float>(*momentum_);
    const auto rest = static_cast<float>(1.0 - *momentum_);
    for (const TensorSlice& t : layout().tensors(g.size())) {
      const auto m = state_store().floats(t.name, kMomentumField, t.elements);
      const float* __restrict old = m.data();
      const float* __restrict in = g.data() + t.offset;
      float* __restrict next = next_momentum_.data() + t.offset;
      for (std::size_t j = 0; j < t.elements; ++j) next[j] = beta * old[j] + rest * in[j];
    }
  }

  std::optional<double> momentum_;
  std::vector<float> next_momentum_;  // this step's momentum, kept once the step completes
};

}  // namespace

std::unique_ptr<Codec> make_signsgd_codec(const SpecSyntax& spec, CodecSettings settings) {
  CodecParams(spec).finish();
  return std::make_unique<SignVoteCodec>(std::nullopt, settings);
}

std::unique_ptr<Codec> make_signum_codec(const SpecSyntax& spec, CodecSettings settings) {
  CodecParams params(spec);
  const double momentum = params.number("momentum", 0.0, 0.999999, 0.9);
  params.finish();
  return std::make_unique<SignVoteCodec>(momentum, settings);
}

}  // namespace qccl
