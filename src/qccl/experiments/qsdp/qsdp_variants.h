// The variants of `qccl experiment qsdp`, named as QSDP §6 and Table 3 name
// them: the codec of the weights each block gathers and the codec of the
// gradients it reduce-scatters. WxGy is x-bit weights on the random-shift
// lattice (Definition 1) and y-bit gradients with stochastic rounding (G32:
// fp32), both min-max per bucket of 1024 (§5.1); "-learned" changes only
// the levels of both to learned ones (§5.2) fitted by exact coordinate
// descent, "-learned-sgd" by Algorithm 2's gradient steps; "-nobucket"
// drops the buckets (§6: "naive quantization without bucketing").
// `baseline` is the paper's baseline (fp32 weights, fp16 gradients);
// `fp32` is uncompressed sharded training, the reference of the speedups.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qccl::tools {

struct QsdpVariant {
  std::string name;            // as the paper writes it: W8G8, W6G4-learned, ...
  std::string weights_codec;   // codec spec of the gathered weights
  std::string gradients_codec; // codec spec of the reduce-scattered gradients
};

// Every variant, in the order the report lists them; the learned ones fit
// their levels at the paper's steps 400, 1900 and 3800 scaled by refit/400
// (minmax's refit and schedule=paper).
std::vector<QsdpVariant> qsdp_variants(std::uint64_t refit);

// The names of qsdp_variants(), in order.
std::vector<std::string> qsdp_variant_names();

// The variants named in `names` (case-insensitive; in the given order),
// every variant when `names` is empty; beyond the listed ones any
// WxGy[-nobucket] (x in 2..8, y in 2..8 or 32: fp32 gradients) with
// uniform levels. Throws InvalidArgument naming an unknown or repeated name
// and listing the valid ones.
std::vector<QsdpVariant> select_qsdp_variants(const std::vector<std::string>& names,
                                              std::uint64_t refit);

// The learned levels' first fit for a run of `steps` steps when none is
// given: 400 of the paper's 4800 steps (Appendix A, GPT-125M) scaled to
// the run, steps/12 rounded and at least 1; the later fits follow at
// 1900/400 and 3800/400 times it (§5.2).
std::uint64_t default_qsdp_refit(std::size_t steps);

}  // namespace qccl::tools
