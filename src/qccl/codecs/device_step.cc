// A codec step on device data (Codec::allreduce_mean, reduce_scatter_mean
// and allgather on DeviceVectors):
// the host step's three parts with the data's work moved to the device.
// 1. The norm statistic is computed where the data is; the step's exchange
//    (call check, global norm) is the host step's.
// 2. The step's encoding gives its element form; the device encodes the
//    whole vector, and the collective runs the encoding's own in-transit
//    reduction on those codes (StagedReduction), chunk by chunk, through
//    host memory. Only codes cross between device and host.
// 3. The device decodes the finished codes into the mean.
// Steps 2 and 3 overlap with the collective: the collective reads a
// chunk's codes once the device says they are on the host, and the device
// decodes each chunk as it finishes (DeviceVector::codes_ready,
// decode_range).
// The encoding must follow from the global norm and the codec's own state
// (CodecTraits::device_step: no input read on the host when building it),
// and have an element form for this step (norms within fp32's range;
// IntSGD's scales finite in fp32 on the int8 and int32 wires). The codecs that run: Global-QSGD, fp16,
// fp32, and the IntSGD family but IntDIANA on every wire (IntSGD
// Algorithm 1's integer sums, rounded in fp32 on int8 and int32 and in fp64
// on int64; its first, exact step as fp32), all
// combined in transit; and min-max with evenly spaced levels in buckets or
// one range per vector (QSDP §4.1 and §5.1's quantizers), whose ranks'
// encodings are gathered: the device finds each bucket's range and encodes
// it, the host's
// gathering bodies move the encoding's own chunks (GatheredStaging), and
// the device decodes every rank's chunk and forms the mean in rank order
// (decode_sum.h's arithmetic), or for an allgather each shard's values.
//
// Over a caller's process group (group_data_path.h) the codes move by the
// group's whole-vector collectives instead of qccl's ring, with the bytes
// of the host step over the same group. The allreduce: Global-QSGD's
// summed int8 levels by one integer SUM allreduce (§4.3: n·s fits the
// wire), IntSGD's integers by the same integer SUM, fp16 and fp32 by the
// group's float SUM allreduce, all of the codes the device made; min-max's
// encodings through the group's allgather of bytes, each rank's whole
// vector as one chunk. The reduce-scatter sums (or gathers) the same way
// and decodes this rank's block; the allgather gathers each rank's
// shard's chunk (the staging's chunks through the host's group bodies).
// Encodings that combine hop by hop (exponential, 4-bit averaging) are
// refused there for the allreduce and the reduce-scatter, as on host data.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/device_vector.h"
#include "qccl/codecs/element_form_reference.h"
#include "qccl/codecs/gathered_staging.h"
#include "qccl/codecs/group_data_path.h"
#include "qccl/codecs/staged_reduction.h"
#include "qccl/collectives/allgather.h"
#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/decode_sum.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/reduce_scatter.h"
#include "qccl/collectives/validate.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

// The form the output decodes by: the step's, or for a gathered form the
// ranks whose codes the result holds per element (every rank's for a mean,
// one for an allgather) and the mean's division.
ElementForm result_form_of(const ElementForm& form, CodecOperation kind, int ranks, int divide_by) {
  ElementForm result = form;
  if (!form_is_gathered(form)) return result;
  const bool mean = kind != CodecOperation::allgather;
  result.ranks = mean ? ranks : 1;
  result.divide_by = mean ? divide_by : 1;
  return result;
}

// The fp32 spans a collective body is given for its element counts: a
// staged step neither reads nor writes them, so they are never touched
// (nor, as allocated, backed by memory).
class UntouchedSpans {
 public:
  UntouchedSpans(CodecOperation kind, std::size_t input_count, std::size_t output_count)
      : allreduce_(kind == CodecOperation::allreduce_mean),
        memory_(new float[input_count + (allreduce_ ? 0 : output_count)]),
        input_(memory_.get(), input_count),
        output_(allreduce_ ? input_ : std::span<float>(memory_.get() + input_count, output_count)) {}
  std::span<float> input() const { return input_; }
  std::span<float> output() const { return output_; }

 private:
  bool allreduce_;
  std::unique_ptr<float[]> memory_;
  std::span<float> input_, output_;
};

// The ring or halving-doubling allreduce, reduce-scatter or allgather on
// the staged codes: combined in transit where the staging is a Reduction
// (StagedReduction), else (GatheredStaging) every rank's encoding travels
// as it is and is decoded where the data is (decode_sum.h; the staging
// divides, so the bodies' division is off) — as the host step's
// Codec::default_move_data chooses.
void run_staged_collective(Communicator& comm, int tag, CodecOperation kind, Encoding& staged,
                           const UntouchedSpans& spans, std::span<const Range> pieces,
                           const CollectiveOptions& options) {
  Reduction* const combined = staged.in_transit();
  switch (kind) {
    case CodecOperation::allreduce_mean:
      if (combined) {
        allreduce_body(comm, tag, spans.input(), spans.output(), *combined, options);
      } else {
        allreduce_by_allgather_body(comm, tag, spans.input(), spans.output(), staged, options);
      }
      return;
    case CodecOperation::reduce_scatter_mean:
      if (combined) {
        reduce_scatter_body(comm, tag, spans.input(), pieces, spans.output(), *combined, options);
      } else {
        reduce_scatter_by_exchange_body(comm, tag, spans.input(), pieces, spans.output(), staged, options);
      }
      return;
    case CodecOperation::allgather:
      allgather_body(comm, tag, spans.input(), pieces, spans.output(), staged, options);
      return;
  }
}

}  // namespace

std::string Codec::device_step_refusal(Algorithm algorithm, bool on_group) const {
  const CodecTraits traits = this->traits();
  if (!traits.device_step) {
    return spec() + " cannot run on device data: its step reads the input on the host or "
           "keeps per-rank state; device steps run global-qsgd, fp16, fp32, intsgd and "
           "intsgd-heuristic (every wire), and minmax with uniform levels; move the data to "
           "the host for this codec";
  }
  if (!on_group && algorithm != Algorithm::ring && algorithm != Algorithm::halving_doubling) {
    return spec() + ": device data runs the ring or halving-doubling algorithm, not " +
           std::string(to_string(algorithm));
  }
  return {};
}

void Codec::allreduce_mean(Communicator& comm, DeviceVector& data, const CollectiveOptions& options) {
  check_supported(CodecOperation::allreduce_mean);
  run_device_step(comm, CodecOperation::allreduce_mean, data, data, {}, options);
}

void Codec::reduce_scatter_mean(Communicator& comm, DeviceVector& input, DeviceVector& output,
                                const CollectiveOptions& options) {
  check_supported(CodecOperation::reduce_scatter_mean);
  const auto blocks = checked_blocks(comm, input.size(), output.size());
  run_device_step(comm, CodecOperation::reduce_scatter_mean, input, output, blocks, options);
}

void Codec::allgather(Communicator& comm, DeviceVector& shard, DeviceVector& output,
                      const CollectiveOptions& options) {
  check_supported(CodecOperation::allgather);
  const std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()), shard.size());
  try {
    check_allgather_arguments(shard.size(), output.size(), counts, comm.size(), comm.rank(), "elements");
  } catch (const InvalidArgument&) {
    rethrow_with_context(spec() + " ");
  }
  const auto shards = ranges_from_counts(counts);
  run_device_step(comm, CodecOperation::allgather, shard, output, shards, options);
}

void Codec::run_device_step(Communicator& comm, CodecOperation kind, DeviceVector& input,
                            DeviceVector& output, std::span<const Range> pieces,
                            const CollectiveOptions& options) {
  validate_options(options, to_string(kind));
  GroupCollectives* const group = group_collectives(comm);
  if (const std::string refusal = device_step_refusal(options.algorithm, group != nullptr);
      !refusal.empty()) {
    throw InvalidArgument(refusal);
  }
  // The gathered shards' codes lie back to back in one buffer: packed
  // codes (4-bit pairs) need every shard to start on a whole byte. The
  // same on every rank (the shards are of one length).
  if (const std::size_t unit = traits().granularity;
      kind == CodecOperation::allgather && input.size() % unit != 0) {
    throw InvalidArgument(spec() + " allgather on device data: shards of " +
                          std::to_string(input.size()) + " elements; its codes pack " +
                          std::to_string(unit) + " elements a unit, so pass shards of a multiple "
                          "of " + std::to_string(unit) + " elements (or gather host data)");
  }
  StepSetup setup = step_setup(kind, options.algorithm, comm.size(), comm.rank());
  setup.input_length = input.size();  // its values stay on the device
  setup.pieces = pieces;
  step_stats() = CodecStepStats{};  // a device step counts no clipping (docs/gpu.md)
  const Operation operation{kind, {}, {}, pieces, {}, false, {}};
  const StepPreparation preparation = prepare(comm, setup, operation, options);
  const bool gather = kind == CodecOperation::allgather;
  CollectiveCall call = begin_step(comm, setup, input.norm_statistic(norm_kind()),
                                   gather ? output.size() : input.size(), options, preparation);
  const std::unique_ptr<Encoding> encoding = step_encoding(setup);
  if (!encoding) {  // every rank's input is zero
    output.fill_zero();
    ++step_;
    return;
  }
  const std::optional<ElementForm> form = encoding->element_form();
  if (!form) {  // the same on every rank: the form follows from the global norm and the state
    throw InvalidArgument(step_name() + ": this step has no element-wise form to run on the "
                          "device (the global norm, here " + std::to_string(setup.norm) +
                          ", must be within fp32's range, and intsgd's scales on the int8 and "
                          "int32 wires finite as fp32 numbers); run it on host data");
  }
  // The same on every rank, before anything is encoded (an allgather
  // combines nothing: any encoding travels through a group).
  if (group != nullptr && kind != CodecOperation::allgather) {
    if (const std::string refusal = group_refusal(*encoding, form_is_gathered(*form), spec());
        !refusal.empty()) {
      throw InvalidArgument(refusal);
    }
  }
  // An allgather's shard is elements pieces[rank] of the step (their
  // generator counters); a reduce-scatter's output, its block.
  const std::size_t mine = static_cast<std::size_t>(comm.rank());
  const std::size_t input_first = gather ? pieces[mine].first : 0;
  const std::size_t output_first = kind == CodecOperation::reduce_scatter_mean ? pieces[mine].first : 0;
  ElementForm input_form = *form;
  input_form.vector_first = input_first;
  const std::span<const std::byte> codes = input.encode(input_form);
  // A gathered form's result holds every rank's codes of each element it
  // decodes into a mean (one rank's for an allgather's).
  const ElementForm result_form =
      result_form_of(*form, kind, comm.size(), traits().means_of_decoded_values ? setup.summed : 1);
  const std::span<std::byte> result = output.result_codes(form_payload_bytes(result_form, output.size()));
  const UntouchedSpans spans(kind, input.size(), output.size());
  const StagedVectors where{.input_first = input_first, .output_first = output_first};
  std::unique_ptr<Encoding> staged;
  GatheredStaging* gathered = nullptr;
  if (form_is_gathered(*form)) {
    auto staging = std::make_unique<GatheredStaging>(*encoding, *form, result_form, input, codes, output, result, where);
    gathered = staging.get();
    staged = std::move(staging);
  } else {
    staged = std::make_unique<StagedReduction>(in_transit(*encoding), *form, input, codes, output, result, where);
  }
  if (group != nullptr) {
    // The host step's group bodies driving the staging's chunks: the group
    // carries the host step's bytes (the staging divides: no division there).
    call.move([&](int) {
      group_move_data(comm, *group, kind, *encoding, form_is_gathered(*form), spec(), *staged,
                      spans.input(), pieces, spans.output(), {}, 1, comm.timeout(options.timeout));
    });
  } else {
    call.move([&](int tag) { run_staged_collective(comm, tag, kind, *staged, spans, pieces, options); });
  }
  output.finish_decoding();  // every chunk's decoding was started as it finished
  if (gathered != nullptr && !gathered->complete()) {
    throw Error(step_name() + ": the collective ended before every rank's codes of every output "
                "element were in, so some were never decoded (a bug in the collective: report it)");
  }
  ++step_;
}

}  // namespace qccl
