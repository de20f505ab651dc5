// The costs MergeComp's model needs (MergeComp §4.3, Assumption 5):
// encode + decode h(x) = B_h + γ_h·x and communication g(x) = B_g + γ_g·x
// of one group of x elements, measured with the run's own codec on the run's
// own communicator, on groups laid out as the model's tensors, then fitted.
// g has two parts: the CPU time of the in-transit reductions, fitted as
// B_r + γ_r·x, and the rest, the link's, fitted with qccl's α-β model
// (perf_model.h) on the bytes the transport counted — steps × α and wire
// bytes per element / β. B_g and γ_g are their sums. A link rate given by
// the user replaces only the measured β (planning for a network other than
// the one measured on); the reduction's CPU time stays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"
#include "qccl/common/export.h"
#include "qccl/scheduling/merge_plan.h"
#include "qccl/scheduling/perf_model.h"

QCCL_API_BEGIN
namespace qccl {

// One size's measurement, medians over the repeats (the maximum over ranks
// of each repeat: a collective ends when its slowest rank does).
struct GroupCostSample {
  std::size_t elements = 0;
  double codec_seconds = 0;          // encode + decode
  double communication_seconds = 0;  // the rest of the call
  double sent_bytes = 0;             // data bytes this rank sent per call
  double reduce_seconds = 0;         // of communication_seconds, the in-transit reductions'
};

struct GroupCostMeasurement {
  std::vector<GroupCostSample> samples;
  GroupCosts costs;           // fitted from the samples
  LinearCost reduction;       // g's CPU part: the in-transit reductions
  ModelParams network;        // α and β of the fit of g's link part
  double wire_bytes_per_element = 0;  // slope of sent bytes against elements
};

struct GroupCostOptions {
  CodecSpec codec;  // fp32 unless given
  std::uint64_t seed = 0;
  CollectiveOptions collective;
  // Sizes in elements; empty: 8 sizes spaced geometrically from 1 Ki to
  // `largest` (at least 2 sizes).
  std::vector<std::size_t> sizes;
  std::size_t largest = std::size_t{1} << 22;
  // The model's tensor sizes in group order (last layers first). Given,
  // each size measured is the group of the fewest first tensors that hold
  // at least that many elements (`largest` is their total), and the codec
  // sees that group's layout, as it will in training (per-tensor scales,
  // select=tensor). Fewer than two distinct groups: the sizes, unlaid out.
  std::vector<std::size_t> tensor_elements;
  int repeats = 3;  // after one unmeasured warm-up call per size
};

// Collective: every rank calls it with the same options. Runs the codec's
// allreduce_mean on synthetic gradients (normal values from the counter
// generator, so sparsifiers and quantizers see realistic data) on a fresh
// codec instance whose state is thrown away, and fits the costs. The results
// are identical on every rank (the per-rank times are combined by an
// exchange). Throws InvalidArgument for a bad spec, repeats < 1 or sizes
// of 0 elements.
GroupCostMeasurement measure_group_costs(Communicator& comm, const GroupCostOptions& options);

// Fits h and g's reduction part by least squares on relative error (weights
// 1/t², as fit_alpha_beta) with B, γ >= 0, and g's link part (the
// communication time less the reductions') by fit_alpha_beta on the
// algorithm's terms with the measured sent bytes; with
// `link_bytes_per_second` the fitted β is replaced by it, the reduction part
// kept. Times that do not grow with the bytes (all within a
// link's burst, or noise) give a constant g: β = ∞, α their mean per step.
// Throws InvalidArgument with fewer than two samples.
GroupCostMeasurement fit_group_costs(std::vector<GroupCostSample> samples, Algorithm algorithm,
                                     int ranks,
                                     std::optional<double> link_bytes_per_second = std::nullopt);

}  // namespace qccl
QCCL_API_END
