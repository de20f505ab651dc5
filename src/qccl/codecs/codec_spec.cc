#include "qccl/codecs/codec_spec.h"

#include <algorithm>
#include <cmath>
#include <charconv>

#include "qccl/common/errors.h"

namespace qccl {
namespace {

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t");
  return std::string(s.substr(first, last - first + 1));
}

// The parameters after a name (or after a wrapper's closing parenthesis):
// "key=value,key=value".
void parse_params(std::string_view text, std::string_view rest, SpecSyntax& spec) {
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
}

// Index of the parenthesis that closes the one at `open`, or npos.
std::size_t closing_parenthesis(std::string_view text, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < text.size(); ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')' && --depth == 0) return i;
  }
  return std::string_view::npos;
}

// A spec's size is checked before anything else reads it: at most
// kMaxSpecLength characters and kMaxSpecNesting wrappers, so that each
// level's copy of its inner text keeps the whole parse linear in the text
// and no spec, from a config file or Python, can exhaust the stack.
void check_spec_size(std::string_view text) {
  if (text.size() > kMaxSpecLength) {
    throw InvalidArgument("a codec spec of " + std::to_string(text.size()) +
                          " characters is refused: specs are at most " +
                          std::to_string(kMaxSpecLength) + " characters (it begins '" +
                          std::string(text.substr(0, 40)) + "...')");
  }
  int depth = 0, deepest = 0;
  for (const char ch : text) {
    if (ch == '(') deepest = std::max(deepest, ++depth);
    if (ch == ')') --depth;
  }
  if (deepest > kMaxSpecNesting) {
    const std::string shown(text.substr(0, 60));
    throw InvalidArgument("codec spec '" + shown + (text.size() > 60 ? "...' nests " : "' nests ") +
                          std::to_string(deepest) + " wrappers; at most " +
                          std::to_string(kMaxSpecNesting) +
                          " are allowed (one is what error feedback needs: ef(SPEC))");
  }
}

}  // namespace

SpecSyntax parse_spec_syntax(std::string_view text) {
  check_spec_size(text);
  SpecSyntax spec;
  const auto name_end = text.find_first_of(":(");
  spec.name = trim(text.substr(0, name_end));
  if (spec.name.empty()) {
    throw InvalidArgument("codec spec '" + std::string(text) +
                          "' has no codec name; write NAME, NAME:key=value,... or "
                          "WRAPPER(SPEC)");
  }
  if (name_end == std::string_view::npos) return spec;
  std::size_t params_start = name_end;
  if (text[name_end] == '(') {
    const auto close = closing_parenthesis(text, name_end);
    if (close == std::string_view::npos) {
      throw InvalidArgument("codec spec '" + std::string(text) + "': '(' is never closed");
    }
    spec.inner = trim(text.substr(name_end + 1, close - name_end - 1));
    if (spec.inner.empty()) {
      throw InvalidArgument("codec spec '" + std::string(text) + "': " + spec.name +
                            "() needs the spec of the codec it wraps, e.g. " + spec.name +
                            "(global-qsgd:bits=4)");
    }
    const std::string after = trim(text.substr(close + 1));
    if (after.empty()) return spec;
    if (after.front() != ':') {
      throw InvalidArgument("codec spec '" + std::string(text) + "': '" + after +
                            "' after the closing parenthesis; parameters follow a ':'");
    }
    params_start = text.find(':', close);
  }
  parse_params(text, text.substr(params_start + 1), spec);
  return spec;
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

std::uint64_t CodecParams::whole_number(std::string_view key, std::uint64_t min,
                                        std::uint64_t max, std::uint64_t fallback) {
  const double value = number(key, static_cast<double>(min), static_cast<double>(max),
                              static_cast<double>(fallback));
  if (value != std::floor(value)) {
    throw InvalidArgument("codec " + spec_.name + ": " + std::string(key) + "=" +
                          format_number(value) + " is not valid; give a whole number in [" +
                          std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return static_cast<std::uint64_t>(value);
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
