#include "qccl/experiments/qsdp/qsdp_variants.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <regex>

#include "qccl/common/errors.h"

namespace qccl::tools {
namespace {

// Weights on the random-shift lattice (§4.1), gradients with stochastic
// rounding (§5.1), `bucket` values per (min, max); 32-bit gradients: fp32.
QsdpVariant uniform(const std::string& name, int weight_bits, int gradient_bits,
                    std::size_t bucket) {
  const std::string b = ",bucket=" + std::to_string(bucket);
  return {name, "minmax:bits=" + std::to_string(weight_bits) + b + ",rounding=shift",
          gradient_bits == 32 ? "fp32" : "minmax:bits=" + std::to_string(gradient_bits) + b};
}

// The uniform variant with learned levels (§5.2) and nothing else changed:
// the weights stay on the random-shift lattice (its levels shifted),
// the gradients keep stochastic rounding; fitted at the paper's steps
// 400, 1900 and 3800 scaled by refit/400, by `fit` (descent or sgd).
QsdpVariant learned(const std::string& name, int weight_bits, int gradient_bits,
                    std::uint64_t refit, const std::string& fit) {
  auto variant = uniform(name, weight_bits, gradient_bits, 1024);
  const std::string levels = ",levels=learned,refit=" + std::to_string(refit) + ",schedule=paper" +
                             (fit == "sgd" ? ",fit=sgd" : "");
  variant.weights_codec += levels;
  if (gradient_bits != 32) variant.gradients_codec += levels;
  return variant;
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// Any WxGy or WxGy-nobucket beyond the listed ones (x in 2..8, y in 2..8 or
// 32), uniform levels: for sweeps such as where bucketless 8 bits starts to
// lose (`W6G6-nobucket`); nothing when `name` is no such name.
std::optional<QsdpVariant> parsed_variant(const std::string& name) {
  static const std::regex pattern("[Ww]([2-8])[Gg]([2-8]|32)(-nobucket)?");
  std::smatch m;
  if (!std::regex_match(name, m, pattern)) return std::nullopt;
  const std::string canonical = "W" + m[1].str() + "G" + m[2].str() + m[3].str();
  return uniform(canonical, std::stoi(m[1].str()), std::stoi(m[2].str()), m[3].matched ? 0 : 1024);
}

std::string joined_names() {
  std::string text;
  for (const auto& name : qsdp_variant_names()) text += (text.empty() ? "" : ", ") + name;
  return text;
}

}  // namespace

std::vector<QsdpVariant> qsdp_variants(std::uint64_t refit) {
  std::vector<QsdpVariant> all{{"baseline", "fp32", "fp16"},
                               {"fp32", "fp32", "fp32"},
                               uniform("W8G8", 8, 8, 1024),
                               uniform("W8G8-nobucket", 8, 8, 0),
                               uniform("W6G4", 6, 4, 1024),
                               uniform("W5G4", 5, 4, 1024),
                               uniform("W4G4", 4, 4, 1024),
                               uniform("W4G32", 4, 32, 1024)};
  for (const std::string fit : {"descent", "sgd"}) {
    const std::string suffix = fit == "sgd" ? "-learned-sgd" : "-learned";
    for (const auto& [w, g] : {std::pair{6, 4}, {5, 4}, {4, 4}, {4, 32}}) {
      const auto name = "W" + std::to_string(w) + "G" + std::to_string(g) + suffix;
      all.push_back(learned(name, w, g, refit, fit));
    }
  }
  return all;
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
    const auto variant = found != all.end() ? std::optional<QsdpVariant>(*found) : parsed_variant(name);
    if (!variant) {
      throw InvalidArgument("unknown variant '" + name + "'; valid: " + joined_names() +
                            ", or any WxGy[-nobucket] with x in 2..8 and y in 2..8 or 32");
    }
    const bool repeated = std::any_of(chosen.begin(), chosen.end(), [&](const QsdpVariant& v) {
      return v.name == variant->name;
    });
    if (repeated) {
      throw InvalidArgument("variant '" + variant->name + "' is listed twice in --variants; "
                            "name each variant once");
    }
    chosen.push_back(*variant);
  }
  return chosen;
}

std::uint64_t default_qsdp_refit(std::size_t steps) {
  const auto scaled = std::llround(static_cast<double>(steps) * 400.0 / 4800.0);
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(scaled));
}

}  // namespace qccl::tools
