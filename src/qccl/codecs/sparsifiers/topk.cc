#include "qccl/codecs/sparsifiers/topk.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "qccl/codecs/error_feedback.h"
#include "qccl/codecs/sparsifiers/sparse_pairs.h"
#include "qccl/codecs/sparsifiers/sparse_selection.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

std::string topk_spec(double ratio, SelectionScope scope, bool error_feedback) {
  return "topk:ratio=" + format_number(ratio) + ",select=" +
         std::string(selection_scope_name(scope)) + ",ef=" + (error_feedback ? "on" : "off");
}

// Top-k without memory. Each rank selects, in every slice of its input
// (selection_slices: with select=group, the default, the whole merged group
// as one tensor, as MergeComp §4.1 Algorithm 1 compresses it; with
// select=tensor the layout's tensors, or an allgather's whole shard), the
// k_t = max(1, ⌈ratio·d_t⌉) elements of largest magnitude — exactly, ties
// to the lower index (select_largest) — when the step's encoding is built,
// so every operation times its selection. The pairs travel by the
// allgather-decode bodies (SparsePairsEncoding); every rank decodes each
// rank's pairs and adds them in rank order, then divides by n.
class TopkCodec final : public Codec {
 public:
  TopkCodec(double ratio, SelectionScope scope, CodecSettings settings)
      : Codec(settings), ratio_(ratio), scope_(scope) {}

  std::string spec() const override { return topk_spec(ratio_, scope_, false); }
  // Dropping the small entries shrinks the result toward zero. The
  // decode-and-sum path forms the mean of the decoded values.
  CodecTraits traits() const override {
    return {.unbiased = false,
            .aggregation = Aggregation::allgather_decode,
            .means_of_decoded_values = true};
  }
  // Wire: exactly what one rank sends for `count` elements in one chunk: a
  // 4-byte pair count and Σ_t k_t (index, value) pairs over the selection's
  // slices (one slice for select=group, or when the layout does not cover
  // `count`). A
  // collective that cuts the vector into c pipeline chunks sends 4·(c − 1)
  // bytes more.
  // Error: every rank's kept values are exact, and what it drops is at most
  // the ∞-norm, so the mean errs by at most the ∞-norm (all ranks dropping
  // an element: the result is 0), plus fp32's rounding of the sum of n
  // values and the division, n·2^-23 of the norm.
  CodecBounds bounds(const BoundsQuery& q) const override {
    return {sparse_pairs_bytes(kept(q.count)),
            q.inf_norm * (1.0 + q.ranks * std::ldexp(1.0, -23))};
  }

 protected:
  // The selection follows the tensors: ranks must agree on them.
  StepPreparation prepare(Communicator&, const StepSetup& setup, const Operation&,
                          const CollectiveOptions&) override {
    return layout_preparation(setup);
  }

  std::unique_ptr<Encoding> step_encoding(const StepSetup& setup) override {
    if (setup.norm == 0.0) return nullptr;  // every rank's input is zero, and so is the mean
    const bool gather = setup.operation == CodecOperation::allgather;
    // An allgather's pairs are indexed in the output, where this rank's
    // shard starts at its piece.
    const std::size_t offset = gather ? setup.pieces[static_cast<std::size_t>(setup.rank)].first : 0;
    std::vector<std::size_t> selected;
    for (const TensorSlice& t : selection_slices(layout(), setup.input.size(), scope_)) {
      select_largest(setup.input.subspan(t.offset, t.elements), sparse_count(ratio_, t.elements),
                     offset + t.offset, selected, scratch_);
    }
    std::size_t max_pairs = kept(setup.input.size());
    if (gather) {  // shards may differ in length (allgatherv)
      for (const Range& shard : setup.pieces) max_pairs = std::max(max_pairs, kept(shard.count));
    }
    return std::make_unique<SparsePairsEncoding>(spec(), std::move(selected), max_pairs);
  }

 private:
  // Σ_t k_t over the slices of data of `length` elements.
  std::size_t kept(std::size_t length) const {
    std::size_t total = 0;
    for (const TensorSlice& t : selection_slices(layout(), length, scope_)) {
      total += sparse_count(ratio_, t.elements);
    }
    return total;
  }

  double ratio_;
  SelectionScope scope_;
  std::vector<std::uint32_t> scratch_;  // magnitudes for the selection
};

}  // namespace

std::unique_ptr<Codec> make_topk_codec(const SpecSyntax& spec, CodecSettings settings) {
  CodecParams params(spec);
  const double ratio = read_sparse_ratio(params, "topk");
  const SelectionScope scope = read_selection_scope(params);
  const bool error_feedback = params.choice("ef", {"on", "off"}, "on") == "on";
  params.finish();
  auto codec = std::make_unique<TopkCodec>(ratio, scope, settings);
  if (!error_feedback) return codec;
  return make_error_feedback_codec(std::move(codec), topk_spec(ratio, scope, true));
}

}  // namespace qccl
