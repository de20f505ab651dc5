// The rows of Global-QSGD §9, Table 4 ("Model quality after fixed-iteration
// training", the Transformer-XL column on WikiText-103, perplexity, mean ±
// sd over 3 seeds) and the codec spec that runs each row here. The default
// four are the table's quantization comparison: no quantization, linear
// dithering with 8 and 4 bits, exponential dithering with 8 bits; QSGD
// 8-bit and PowerSGD rank 32, the paper's baselines, run when named.
#pragma once

#include <string>
#include <vector>

#include "qccl/experiments/intsgd/rounding_variants.h"

namespace qccl::tools {

struct QualityVariant {
  RoundingVariant run;            // name, codec spec, the paper's label
  double paper_ppl = 0, paper_sd = 0;  // Table 4, Transformer-XL
};

// Every variant, the default four first.
std::vector<QualityVariant> quality_variants();

// fp32, linear-8, linear-4, exp-8.
std::vector<std::string> default_quality_variant_names();

// The variants named (case-insensitive, in the given order); the default
// four when `names` is empty. InvalidArgument names an unknown or repeated
// name and lists the valid ones.
std::vector<QualityVariant> select_quality_variants(const std::vector<std::string>& names);

}  // namespace qccl::tools
