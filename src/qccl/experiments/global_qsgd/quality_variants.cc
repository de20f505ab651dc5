#include "qccl/experiments/global_qsgd/quality_variants.h"

#include "qccl/common/named_selection.h"

namespace qccl::tools {

std::vector<QualityVariant> quality_variants() {
  return {{{"fp32", "fp32", "No Quantization"}, 22.99, 0.11},
          {{"linear-8", "global-qsgd:bits=8", "L 8-bit (linear dithering)"}, 32.35, 0.71},
          {{"linear-4", "global-qsgd:bits=4", "L 4-bit (linear dithering)"}, 44.95, 0.93},
          {{"exp-8", "global-qsgd:bits=8,dither=exp", "E 8-bit (exponential dithering)"},
           23.68, 0.12},
          {{"qsgd-8", "qsgd:bits=8", "QSGD 8-bit"}, 30.82, 0.38},
          {{"powersgd-32", "powersgd:rank=32", "PowerSGD 32-rank"}, 23.36, 0.20}};
}

std::vector<std::string> default_quality_variant_names() {
  return {"fp32", "linear-8", "linear-4", "exp-8"};
}

std::vector<QualityVariant> select_quality_variants(const std::vector<std::string>& names) {
  return select_named(quality_variants(), names.empty() ? default_quality_variant_names() : names,
                      [](const QualityVariant& v) { return v.run.name; }, "--variants");
}

}  // namespace qccl::tools
