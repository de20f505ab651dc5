// The variants of `qccl experiment intsgd-rounding` (IntSGD §5.2, Figure 1,
// and §5.3, Tables 2–3): full-precision SGD; IntSGD with the randomized
// rounding its theory analyses ("IntSGD (Random)"); IntSGD with
// deterministic rounding to nearest ("IntSGD (Determ.)", torch.round in
// the paper); and Heuristic IntSGD, the scale of Sapio et al. (SwitchML)
// that §5.2 compares against: α = (2^(b−1) − 1)/(n·2^max_exp) from the
// largest |value| over all ranks, rounded to nearest as SwitchML does. All
// integer variants travel on the int8 wire unless their name says int32
// (Figure 1 shows the heuristic with both).
#pragma once

#include <string>
#include <vector>

namespace qccl::tools {

struct RoundingVariant {
  std::string name;   // intsgd-random, heuristic-int32, ...
  std::string codec;  // the gradients' codec spec
  std::string label;  // as the paper names it: "IntSGD (Random)", ...
};

// Every variant, the four the experiment runs by default first.
std::vector<RoundingVariant> rounding_variants();

// The default four: sgd, intsgd-random, intsgd-determ, heuristic.
std::vector<std::string> default_rounding_variant_names();

// The variants named (case-insensitive, in the given order); the default
// four when `names` is empty. InvalidArgument names an unknown or repeated
// name and lists the valid ones.
std::vector<RoundingVariant> select_rounding_variants(const std::vector<std::string>& names);

}  // namespace qccl::tools
