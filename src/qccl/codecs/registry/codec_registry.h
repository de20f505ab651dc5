// Every codec by name: building one from its spec, and the catalog for help
// texts. Codecs themselves never include this file; wrappers (error
// feedback) receive the codec they wrap already built.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "qccl/codecs/codec.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

// A codec spec parsed, checked and made canonical once: every parameter
// with its value, defaults included, in the codec's own order
// ("global-qsgd:bits=4" is "global-qsgd:bits=4,dither=linear,norm=inf,
// sparse=off"). It is the value the command line, the Python package and
// configuration files hand to the engines and tools, which build codecs
// from it and compare and print it, and never edit or canonicalise text.
class CodecSpec {
 public:
  // fp32, the uncompressed baseline.
  CodecSpec();
  // Parses `text` ("name", "name:key=value,...", "wrapper(inner spec)");
  // an unknown name or parameter, or a bad value, throws InvalidArgument
  // listing what is valid.
  static CodecSpec parse(std::string_view text);

  // The canonical text, which parse() reads back as this same spec.
  const std::string& text() const { return text_; }
  // The codec's name: "global-qsgd", "ef".
  std::string name() const;
  bool operator==(const CodecSpec& other) const { return text_ == other.text_; }

 private:
  explicit CodecSpec(std::string canonical) : text_(std::move(canonical)) {}
  std::string text_;
};

// Builds a codec from its spec; an unknown name or parameter, or a bad value,
// throws InvalidArgument listing what is valid. A wrapper's inner spec is
// built first, with the same settings.
std::unique_ptr<Codec> make_codec(std::string_view spec, CodecSettings settings = {});
std::unique_ptr<Codec> make_codec(const CodecSpec& spec, CodecSettings settings = {});

// Names and one-line descriptions of every codec, for help texts.
std::vector<std::pair<std::string, std::string>> codec_catalog();

}  // namespace qccl
QCCL_API_END
