// Codec specs as strings, for the CLI and configs: "name" or
// "name:key=value,key=value", e.g. "fp16", "global-qsgd:bits=8,norm=2".
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "qccl/codecs/codec.h"

namespace qccl {

struct CodecSpec {
  std::string name;
  std::vector<std::pair<std::string, std::string>> params;
};

// Parses the syntax only; throws InvalidArgument on malformed text.
CodecSpec parse_codec_spec(std::string_view text);

// Builds a codec from its spec; an unknown name or parameter, or a bad value,
// throws InvalidArgument listing what is valid.
std::unique_ptr<Codec> make_codec(std::string_view spec, CodecSettings settings = {});

// Shortest text that reads back as `value` ("0.9", "1e-08").
std::string format_number(double value);

// Names and one-line descriptions of every codec, for help texts.
std::vector<std::pair<std::string, std::string>> codec_catalog();

// Reads one codec's parameters: each is looked up once with its allowed
// values and default; finish() rejects any parameter nobody asked for.
class CodecParams {
 public:
  explicit CodecParams(const CodecSpec& spec) : spec_(spec) {}
  std::string choice(std::string_view key, std::initializer_list<std::string_view> allowed,
                     std::string_view fallback);
  // A number in [min, max]; rejects text that is not one.
  double number(std::string_view key, double min, double max, double fallback);
  void finish() const;

 private:
  const CodecSpec& spec_;
  std::vector<std::string> known_;
};

}  // namespace qccl
