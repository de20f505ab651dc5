#include "qccl/codecs/sign/one_bit_codecs.h"

#include <cmath>
#include <vector>

#include "qccl/codecs/error_feedback.h"
#include "qccl/codecs/sign/sign_bits.h"
#include "qccl/codecs/sign/sign_levels_encoding.h"

namespace qccl {
namespace {

// EF-SignSGD's C(p) = (||p||_1 / d) sign(p) (Karimireddy et al. 2019,
// Algorithm 1): the scale, summed in fp64 in element order.
SignLevels scaled_sign_levels(std::span<const float> p) {
  if (p.empty()) return {0.0f, -0.0f};
  double sum = 0;
  for (float v : p) sum += std::abs(static_cast<double>(v));
  const auto scale = static_cast<float>(sum / static_cast<double>(p.size()));
  return {scale, -scale};
}

// 1-bit SGD's reconstruction values (Seide et al. 2014): the mean of the
// non-negative and of the negative elements (0 for a side that has none).
// Without branches: signs are random, and a branch would mispredict half of
// the time. Each side adds w·x, w ∈ {0, 1}; the other side's x·0 is ±0,
// which leaves the sum's bits as the branching loop has them (the input is
// finite: the step checked it).
SignLevels two_mean_levels(std::span<const float> p) {
  double positive = 0, negative = 0;
  std::size_t positives = 0;
  for (float v : p) {
    const bool non_negative = v >= 0.0f;
    const double x = v, w = static_cast<double>(static_cast<int>(non_negative));
    positive += w * x;
    negative += (1.0 - w) * x;
    positives += non_negative;
  }
  const std::size_t negatives = p.size() - positives;
  return {positives ? static_cast<float>(positive / static_cast<double>(positives)) : 0.0f,
          negatives ? static_cast<float>(negative / static_cast<double>(negatives)) : 0.0f};
}

// A 1-bit quantizer with per-tensor levels (see the header): scaled-sign or
// onebit-quantizer.
class SignLevelsCodec final : public Codec {
 public:
  SignLevelsCodec(SignHeader header, CodecSettings settings) : Codec(settings), header_(header) {}

  std::string spec() const override {
    return header_ == SignHeader::scale ? "scaled-sign" : "onebit-quantizer";
  }
  // The decode-and-sum path forms the mean of the decoded values.
  CodecTraits traits() const override {
    return {.unbiased = false,
            .aggregation = Aggregation::allgather_decode,
            .granularity = 8,
            .means_of_decoded_values = true};
  }
  // Wire: one encoding of the whole vector, a header per non-empty tensor
  // of the layout (one tensor without a layout) and one bit per element.
  // Pipeline chunks that split a tensor repeat its header.
  // Error: each level lies between 0 and the tensor's extreme on the side
  // of zero it stands for (a scale ||p||_1/d <= ||p||_inf; a mean of
  // non-negative or of negative elements), and so does every element it
  // replaces: each rank errs by at most its inf-norm, and so does the mean.
  // Plus the fp32 rounding of the sum over ranks, at most n units of 2^-23
  // of the norm.
  CodecBounds bounds(const BoundsQuery& q) const override {
    std::size_t tensors = 0;
    if (layout().unnamed() || layout().total() != q.count) {
      tensors = q.count > 0;
    } else {
      for (const TensorSlice& t : layout().tensors(q.count)) tensors += t.elements > 0;
    }
    return {tensors * sign_header_bytes(header_) + sign_bytes(q.count),
            q.inf_norm * (1.0 + std::ldexp(static_cast<double>(q.ranks), -23))};
  }

 protected:
  // A decoder reads as many headers as the chunk overlaps tensors of its
  // own layout: ranks with different layouts fail the call check instead.
  StepPreparation prepare(Communicator&, const StepSetup& setup, const Operation&,
                          const CollectiveOptions&) override {
    return layout_preparation(setup);
  }

  // The levels of each tensor from the whole input (an allgather: of this
  // rank's shard, one tensor per shard). A zero norm means every rank's
  // input is zero, and so is every level: nothing moves.
  std::unique_ptr<Encoding> step_encoding(const StepSetup& setup) override {
    if (setup.norm == 0.0) return nullptr;
    SignLevelsSetup levels;
    levels.name = spec();
    levels.header = header_;
    levels.bounds.clear();
    levels.levels.clear();
    if (setup.operation == CodecOperation::allgather) {
      for (const Range& shard : setup.pieces) levels.bounds.push_back(shard.first);
      levels.bounds.push_back(setup.pieces.empty() ? 0 : setup.pieces.back().end());
      levels.levels.resize(setup.pieces.size());
      levels.levels[static_cast<std::size_t>(setup.rank)] = levels_of(setup.input);
    } else {
      const auto tensors = layout().tensors(setup.input.size());
      for (const TensorSlice& t : tensors) {
        levels.bounds.push_back(t.offset);
        levels.levels.push_back(levels_of(setup.input.subspan(t.offset, t.elements)));
      }
      // Without a layout the one tensor is as long as any chunk asks (a
      // tool's encoding_for() has no input).
      levels.bounds.push_back(layout().unnamed() ? static_cast<std::size_t>(-1)
                                                 : setup.input.size());
    }
    return make_sign_levels_encoding(std::move(levels));
  }

 private:
  SignLevels levels_of(std::span<const float> p) const {
    return header_ == SignHeader::scale ? scaled_sign_levels(p) : two_mean_levels(p);
  }

  SignHeader header_;
};

}  // namespace

std::unique_ptr<Codec> make_scaled_sign_codec(const SpecSyntax& spec, CodecSettings settings) {
  CodecParams(spec).finish();
  return std::make_unique<SignLevelsCodec>(SignHeader::scale, settings);
}

std::unique_ptr<Codec> make_ef_signsgd_codec(const SpecSyntax& spec, CodecSettings settings) {
  CodecParams(spec).finish();
  return make_error_feedback_codec(std::make_unique<SignLevelsCodec>(SignHeader::scale, settings),
                                   "ef-signsgd");
}

std::unique_ptr<Codec> make_onebit_quantizer_codec(const SpecSyntax& spec, CodecSettings settings) {
  CodecParams(spec).finish();
  return std::make_unique<SignLevelsCodec>(SignHeader::two_means, settings);
}

std::unique_ptr<Codec> make_onebit_codec(const SpecSyntax& spec, CodecSettings settings) {
  CodecParams(spec).finish();
  return make_error_feedback_codec(
      std::make_unique<SignLevelsCodec>(SignHeader::two_means, settings), "onebit");
}

}  // namespace qccl
