#include "qccl/experiments/intsgd/rounding_variants.h"

#include "qccl/common/named_selection.h"

namespace qccl::tools {

std::vector<RoundingVariant> rounding_variants() {
  return {{"sgd", "fp32", "SGD (full precision)"},
          {"intsgd-random", "intsgd:round=random,wire=int8", "IntSGD (Random), int8"},
          {"intsgd-determ", "intsgd:round=deterministic,wire=int8", "IntSGD (Determ.), int8"},
          {"heuristic", "intsgd-heuristic:round=deterministic,wire=int8",
           "Heuristic IntSGD, int8"},
          {"heuristic-int32", "intsgd-heuristic:round=deterministic,wire=int32",
           "Heuristic IntSGD, int32"},
          {"heuristic-random", "intsgd-heuristic:round=random,wire=int8",
           "Heuristic IntSGD, random rounding, int8"},
          {"intsgd-random-int32", "intsgd:round=random,wire=int32", "IntSGD (Random), int32"},
          {"intsgd-determ-int32", "intsgd:round=deterministic,wire=int32",
           "IntSGD (Determ.), int32"}};
}

std::vector<std::string> default_rounding_variant_names() {
  return {"sgd", "intsgd-random", "intsgd-determ", "heuristic"};
}

std::vector<RoundingVariant> select_rounding_variants(const std::vector<std::string>& names) {
  return select_named(rounding_variants(), names.empty() ? default_rounding_variant_names() : names,
                      [](const RoundingVariant& v) { return v.name; }, "--variants");
}

}  // namespace qccl::tools
