// The variants of `qccl experiment qsdp`, named as QSDP §6 and Table 3 name
// them: the codec of the weights each block gathers and the codec of the
// gradients it reduce-scatters. WxGy is x-bit weights on the random-shift
// lattice (Definition 1) and y-bit gradients with stochastic rounding, both
// min-max per bucket of 1024 (§5.1); "-learned" fits the levels of both
// (§5.2), "-nobucket" drops the buckets (§6: "naive quantization without
// bucketing"). `baseline` is the paper's baseline (fp32 weights, fp16
// gradients); `fp32` is uncompressed sharded training, the reference of the
// speedups.
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

// Every variant, in the order the report lists them; the learned ones refit
// their levels at steps refit·2^j (minmax's `refit`).
std::vector<QsdpVariant> qsdp_variants(std::uint64_t refit);

// The names of qsdp_variants(), in order.
std::vector<std::string> qsdp_variant_names();

// The variants named in `names` (case-insensitive; in the given order),
// every variant when `names` is empty. Throws InvalidArgument naming an
// unknown or repeated name and listing the valid ones.
std::vector<QsdpVariant> select_qsdp_variants(const std::vector<std::string>& names,
                                              std::uint64_t refit);

// The learned levels' refit period for a run of `steps` steps when none is
// given: steps/8 rounded, at least 1, so that the levels are fitted at
// about 1/8, 1/4 and 1/2 of the run (and at its end) — early, as §6 found
// one early fit enough.
std::uint64_t default_qsdp_refit(std::size_t steps);

}  // namespace qccl::tools
