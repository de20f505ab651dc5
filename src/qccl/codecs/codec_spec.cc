#include "qccl/codecs/codec_spec.h"

#include <algorithm>
#include <charconv>

#include "qccl/codecs/float_codecs.h"
#include "qccl/codecs/global_qsgd.h"
#include "qccl/codecs/intsgd.h"
#include "qccl/codecs/qsgd.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

struct CatalogEntry {
  std::string_view name;
  std::string_view description;
  std::unique_ptr<Codec> (*make)(const CodecSpec&, CodecSettings);
};

// The registry is a constant table: adding a codec adds a row.
constexpr CatalogEntry kCatalog[] = {
    {"fp32", "no compression: fp32 ring/tree/native allreduce", make_fp32_codec},
    {"fp16", "fp16 on the wire, summed in fp16 hop by hop", make_fp16_codec},
    {"global-qsgd",
     "Global-QSGD (global-norm quantization, summed in transit); params bits=8|4, "
     "dither=linear|exp (exp: 8-bit), norm=inf|2, sparse=off|auto (8-bit)",
     make_global_qsgd_codec},
    {"qsgd",
     "QSGD baseline (per-rank bucket norms, allgather then decode); params bits=8|4, "
     "bucket=128..4096 (512), norm=2|inf",
     make_qsgd_codec},
    {"intsgd",
     "IntSGD (adaptive integer rounding summed exactly; needs the optimizer's step feedback, "
     "first step exact); params round=random|deterministic, wire=int8|int32|int64, "
     "beta=0.9, eps=1e-8",
     make_intsgd_codec},
    {"intsgd-heuristic",
     "Heuristic IntSGD baseline (SwitchML scale from the max exponent); params "
     "round=random|deterministic, wire=int8|int32|int64",
     make_heuristic_intsgd_codec},
    {"intdiana",
     "IntDIANA (integer rounding of gradient differences with per-rank shifts; needs step "
     "feedback); params round=random|deterministic, wire=int8|int32|int64, beta=0, eps=1e-8",
     make_intdiana_codec},
};

std::string join_names() {
  std::string names;
  for (const auto& e : kCatalog) names += (names.empty() ? "" : ", ") + std::string(e.name);
  return names;
}

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t");
  return std::string(s.substr(first, last - first + 1));
}

}  // namespace

CodecSpec parse_codec_spec(std::string_view text) {
  CodecSpec spec;
  const auto colon = text.find(':');
  spec.name = trim(text.substr(0, colon));
  if (spec.name.empty()) {
    throw InvalidArgument("codec spec '" + std::string(text) +
                          "' has no codec name; valid codecs: " + join_names());
  }
  if (colon == std::string_view::npos) return spec;
  std::string_view rest = text.substr(colon + 1);
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string item = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const auto equals = item.find('=');
    if (item.empty() || equals == std::string::npos || equals == 0 || equals + 1 == item.size()) {
      throw InvalidArgument("codec spec '" + std::string(text) + "': '" + item +
                            "' is not key=value");
    }
    std::string key = trim(item.substr(0, equals));
    for (const auto& [k, v] : spec.params) {
      if (k == key) {
        throw InvalidArgument("codec spec '" + std::string(text) + "' sets '" + key + "' twice");
      }
    }
    spec.params.emplace_back(std::move(key), trim(item.substr(equals + 1)));
  }
  return spec;
}

std::unique_ptr<Codec> make_codec(std::string_view text, CodecSettings settings) {
  const CodecSpec spec = parse_codec_spec(text);
  for (const auto& entry : kCatalog) {
    if (entry.name == spec.name) return entry.make(spec, settings);
  }
  throw InvalidArgument("unknown codec '" + spec.name + "'; valid codecs: " + join_names());
}

std::vector<std::pair<std::string, std::string>> codec_catalog() {
  std::vector<std::pair<std::string, std::string>> list;
  for (const auto& e : kCatalog) list.emplace_back(e.name, e.description);
  return list;
}

std::string CodecParams::choice(std::string_view key,
                                std::initializer_list<std::string_view> allowed,
                                std::string_view fallback) {
  known_.emplace_back(key);
  for (const auto& [k, v] : spec_.params) {
    if (k != key) continue;
    if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return v;
    std::string valid;
    for (auto a : allowed) valid += (valid.empty() ? "" : ", ") + std::string(a);
    throw InvalidArgument("codec " + spec_.name + ": " + std::string(key) + "=" + v +
                          " is not valid; valid values: " + valid);
  }
  return std::string(fallback);
}

double CodecParams::number(std::string_view key, double min, double max, double fallback) {
  known_.emplace_back(key);
  for (const auto& [k, v] : spec_.params) {
    if (k != key) continue;
    double value = 0;
    const auto [end, error] = std::from_chars(v.data(), v.data() + v.size(), value);
    if (error != std::errc() || end != v.data() + v.size() || !(value >= min && value <= max)) {
      throw InvalidArgument("codec " + spec_.name + ": " + std::string(key) + "=" + v +
                            " is not valid; give a number in [" + format_number(min) + ", " +
                            format_number(max) + "]");
    }
    return value;
  }
  return fallback;
}

std::string format_number(double value) {
  char text[32];
  const auto [end, error] = std::to_chars(text, text + sizeof text, value);
  return error == std::errc() ? std::string(text, end) : std::to_string(value);
}

void CodecParams::finish() const {
  for (const auto& [k, v] : spec_.params) {
    if (std::find(known_.begin(), known_.end(), k) != known_.end()) continue;
    std::string valid;
    for (const auto& n : known_) valid += (valid.empty() ? "" : ", ") + n;
    throw InvalidArgument("codec " + spec_.name + " has no parameter '" + k + "'; valid: " +
                          (valid.empty() ? std::string("none") : valid));
  }
}

}  // namespace qccl
