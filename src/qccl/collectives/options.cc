#include "qccl/collectives/options.h"

#include "qccl/common/errors.h"

namespace qccl {

std::string_view to_string(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::ring: return "ring";
    case Algorithm::halving_doubling: return "halving-doubling";
    case Algorithm::native: return "native";
    case Algorithm::hierarchical: return "hierarchical";
  }
  return "unknown";
}

std::vector<std::string> algorithm_names() {
  return {"ring", "halving-doubling", "native", "hierarchical"};
}

Algorithm parse_algorithm(std::string_view text) {
  for (Algorithm a : {Algorithm::ring, Algorithm::halving_doubling, Algorithm::native,
                      Algorithm::hierarchical}) {
    if (text == to_string(a)) return a;
  }
  if (text == "tree") return Algorithm::halving_doubling;
  throw InvalidArgument("unknown algorithm '" + std::string(text) +
                        "'; valid algorithms: ring, halving-doubling (or tree), native, "
                        "hierarchical");
}

}  // namespace qccl
