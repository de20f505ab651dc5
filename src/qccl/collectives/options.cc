#include "qccl/collectives/options.h"

#include "qccl/common/errors.h"

namespace qccl {

std::string_view to_string(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::ring: return "ring";
    case Algorithm::tree: return "tree";
    case Algorithm::native: return "native";
  }
  return "unknown";
}

std::vector<std::string> algorithm_names() { return {"ring", "tree", "native"}; }

Algorithm parse_algorithm(std::string_view text) {
  for (Algorithm a : {Algorithm::ring, Algorithm::tree, Algorithm::native}) {
    if (text == to_string(a)) return a;
  }
  throw InvalidArgument("unknown algorithm '" + std::string(text) +
                        "'; valid algorithms: ring, tree, native");
}

}  // namespace qccl
