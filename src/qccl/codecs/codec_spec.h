// Codec specs as strings, for the CLI and configs: "name",
// "name:key=value,key=value", or a wrapper around another spec,
// "name(inner spec)" with its own parameters after it, e.g. "fp16",
// "global-qsgd:bits=8,norm=2", "ef(global-qsgd:bits=4)".
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qccl {

struct SpecSyntax {
  std::string name;
  // A wrapper's inner spec, as written between the parentheses; empty for
  // a plain codec.
  std::string inner;
  std::vector<std::pair<std::string, std::string>> params;
};

// The largest spec accepted, in characters and in wrappers nested one in
// another (ef(ef(x)) nests 2): far beyond any meaningful spec, small
// enough that parsing stays linear and shallow.
inline constexpr std::size_t kMaxSpecLength = 1024;
inline constexpr int kMaxSpecNesting = 4;

// Parses the syntax only (the inner spec of a wrapper is checked when it is
// built); throws InvalidArgument on malformed text, and on text longer than
// kMaxSpecLength or nested deeper than kMaxSpecNesting.
SpecSyntax parse_spec_syntax(std::string_view text);

// Shortest text that reads back as `value` ("0.9", "1e-08").
std::string format_number(double value);

// Reads one codec's parameters: each is looked up once with its allowed
// values and default; finish() rejects any parameter nobody asked for.
class CodecParams {
 public:
  explicit CodecParams(const SpecSyntax& spec) : spec_(spec) {}
  std::string choice(std::string_view key, std::initializer_list<std::string_view> allowed,
                     std::string_view fallback);
  // A number in [min, max]; rejects text that is not one.
  double number(std::string_view key, double min, double max, double fallback);
  // A whole number in [min, max] (bits, bucket sizes, step counts).
  std::uint64_t whole_number(std::string_view key, std::uint64_t min, std::uint64_t max,
                             std::uint64_t fallback);
  void finish() const;

 private:
  const SpecSyntax& spec_;
  std::vector<std::string> known_;
};

}  // namespace qccl
