#include "qccl/experiments/qsdp/qsdp_variants.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "qccl/common/errors.h"

namespace qccl::tools {
namespace {

// Weights on the random-shift lattice (§4.1), gradients with stochastic
// rounding (§5.1), `bucket` values per (min, max).
QsdpVariant uniform(const std::string& name, int weight_bits, int gradient_bits,
                    std::size_t bucket) {
  const std::string b = ",bucket=" + std::to_string(bucket);
  return {name, "minmax:bits=" + std::to_string(weight_bits) + b + ",rounding=shift",
          "minmax:bits=" + std::to_string(gradient_bits) + b};
}

// Learned levels for both (§5.2; stochastic rounding, which they need).
QsdpVariant learned(const std::string& name, int weight_bits, int gradient_bits,
                    std::uint64_t refit) {
  const std::string rest = ",bucket=1024,levels=learned,refit=" + std::to_string(refit);
  return {name, "minmax:bits=" + std::to_string(weight_bits) + rest,
          "minmax:bits=" + std::to_string(gradient_bits) + rest};
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string joined_names() {
  std::string text;
  for (const auto& name : qsdp_variant_names()) text += (text.empty() ? "" : ", ") + name;
  return text;
}

}  // namespace

std::vector<QsdpVariant> qsdp_variants(std::uint64_t refit) {
  return {{"baseline", "fp32", "fp16"},
          {"fp32", "fp32", "fp32"},
          uniform("W8G8", 8, 8, 1024),
          uniform("W8G8-nobucket", 8, 8, 0),
          uniform("W6G4", 6, 4, 1024),
          uniform("W5G4", 5, 4, 1024),
          uniform("W4G4", 4, 4, 1024),
          learned("W6G4-learned", 6, 4, refit),
          learned("W5G4-learned", 5, 4, refit),
          learned("W4G4-learned", 4, 4, refit)};
}

std::vector<std::string> qsdp_variant_names() {
  std::vector<std::string> names;
  for (const auto& v : qsdp_variants(1)) names.push_back(v.name);
  return names;
}

std::vector<QsdpVariant> select_qsdp_variants(const std::vector<std::string>& names,
                                              std::uint64_t refit) {
  const auto all = qsdp_variants(refit);
  if (names.empty()) return all;
  std::vector<QsdpVariant> chosen;
  for (const auto& name : names) {
    const auto found = std::find_if(all.begin(), all.end(), [&](const QsdpVariant& v) {
      return lower(v.name) == lower(name);
    });
    if (found == all.end()) {
      throw InvalidArgument("unknown variant '" + name + "'; valid: " + joined_names());
    }
    const bool repeated = std::any_of(chosen.begin(), chosen.end(), [&](const QsdpVariant& v) {
      return v.name == found->name;
    });
    if (repeated) {
      throw InvalidArgument("variant '" + found->name + "' is listed twice in --variants; "
                            "name each variant once");
    }
    chosen.push_back(*found);
  }
  return chosen;
}

std::uint64_t default_qsdp_refit(std::size_t steps) {
  const auto eighth = std::llround(static_cast<double>(steps) / 8.0);
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(eighth));
}

}  // namespace qccl::tools
