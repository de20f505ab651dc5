#include "qccl/codecs/error_feedback.h"

#include <vector>

#include "qccl/common/byte_io.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

constexpr std::string_view kResidualField = "ef.residual";

class ErrorFeedbackCodec final : public Codec {
 public:
  ErrorFeedbackCodec(std::unique_ptr<Codec> inner, std::string spec)
      : Codec(inner->settings()), inner_(std::move(inner)), spec_(std::move(spec)) {
    offer_step_feedback(inner_->step_feedback());
  }

  std::string spec() const override { return spec_.empty() ? "ef(" + inner_->spec() + ")" : spec_; }
  // Each step's result is biased by the residuals it carries; over steps
  // nothing is lost. The inner codec's means only (gathered values are used
  // as they are).
  CodecTraits traits() const override {
    CodecTraits traits = inner_->traits();
    traits.unbiased = false;
    traits.operations.allgather = false;
    // Its residual is this rank's x − Q(x); host means have no such x.
    traits.host_means = false;
    traits.zero_stays_zero = false;  // the residual is added to the input
    traits.device_step = false;      // needs its own decoded contribution
    return traits;
  }
  // The result differs from the mean of this step's inputs by the residuals
  // as well: there is no per-step bound against the input.
  CodecBounds bounds(const BoundsQuery& query) const override {
    return {.wire_bytes = inner_->wire_bytes(query.count)};
  }

  void set_layout(TensorLayout layout, std::shared_ptr<TensorStateStore> store) override {
    inner_->set_layout(layout, store);
    Codec::set_layout(std::move(layout), std::move(store));
  }

  // [uint64 length of the residuals' part][residuals (an owned store)][the
  // inner codec's state].
  std::vector<std::byte> save_state() const override {
    ByteWriter out;
    out.values(Codec::save_state());
    out.bytes(inner_->save_state());
    return out.take();
  }
  void load_state(std::span<const std::byte> state) override {
    if (state.empty()) {
      Codec::load_state(state);
      inner_->load_state(state);
      return;
    }
    ByteReader in(state, spec() + ": saved state", "was the checkpoint damaged?");
    const auto residuals = in.values<std::byte>("the residuals");
    Codec::load_state(residuals);
    inner_->load_state(in.rest());
  }

 protected:
  std::unique_ptr<Encoding> step_encoding(const StepSetup& setup) override {
    inner_->set_step(step());  // the inner codec's steps are this codec's
    return inner_->encoding_for(setup);
  }

  // p = x + e; the inner codec's operation on p, which also yields Q(p);
  // then e = p − Q(p), tensor by tensor.
  void run_operation(Communicator& comm, const Operation& operation,
                     const CollectiveOptions& options) override {
    const std::size_t d = operation.input.size();
    layout().check(d, step_name());
    const auto tensors = layout().tensors(d);
    pushed_.resize(d);
    contribution_.resize(d);
    for (const TensorSlice& t : tensors) {
      const auto residual = state_store().floats(t.name, kResidualField, t.elements);
      const float* __restrict x = operation.input.data() + t.offset;
      float* __restrict p = pushed_.data() + t.offset;
      for (std::size_t j = 0; j < t.elements; ++j) p[j] = x[j] + residual[j];
    }
    inner_->set_step(step());  // the inner codec's steps are this codec's
    try {
      if (operation.kind == CodecOperation::allreduce_mean) {
        std::copy(pushed_.begin(), pushed_.end(), operation.output.begin());
        inner_->allreduce_mean(comm, operation.output, options, contribution_);
      } else {
        inner_->reduce_scatter_mean(comm, pushed_, operation.output, options, contribution_);
      }
    } catch (const NonFiniteError& e) {
      // Raised on every rank by the inner step's exchange, before any data moved.
      throw NonFiniteError(step_name() + ": the input plus the residual kept from earlier "
                           "steps, x + e, is not finite: an input near fp32's largest value "
                           "(about 3.4e38) plus its residual overflows fp32, or the input holds "
                           "NaN or Inf; the residuals are unchanged. Scale the loss or the "
                           "gradients down. (" + std::string(e.what()) + ")");
    }
    step_stats() = inner_->last_step_stats();
    for (const TensorSlice& t : tensors) {
      const auto residual = state_store().floats(t.name, kResidualField, t.elements);
      const float* __restrict p = pushed_.data() + t.offset;
      const float* __restrict q = contribution_.data() + t.offset;
      for (std::size_t j = 0; j < t.elements; ++j) residual[j] = p[j] - q[j];
    }
    if (!operation.own.empty()) {
      std::copy(contribution_.begin(), contribution_.end(), operation.own.begin());
    }
  }

 private:
  std::unique_ptr<Codec> inner_;
  std::string spec_;  // empty: "ef(inner spec)"
  std::vector<float> pushed_, contribution_;  // reused: p and Q(p)
};

}  // namespace

std::unique_ptr<Codec> make_error_feedback_codec(std::unique_ptr<Codec> inner, std::string spec) {
  if (!inner->supports(CodecOperation::allreduce_mean) &&
      !inner->supports(CodecOperation::reduce_scatter_mean)) {
    throw InvalidArgument("ef(" + inner->spec() + "): the inner codec has no mean to correct");
  }
  return std::make_unique<ErrorFeedbackCodec>(std::move(inner), std::move(spec));
}

std::unique_ptr<Codec> make_error_feedback_codec(const SpecSyntax& spec,
                                                 std::unique_ptr<Codec> inner) {
  CodecParams(spec).finish();
  return make_error_feedback_codec(std::move(inner), std::string());
}

}  // namespace qccl
