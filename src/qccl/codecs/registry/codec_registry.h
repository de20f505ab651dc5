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

// Builds a codec from its spec; an unknown name or parameter, or a bad value,
// throws InvalidArgument listing what is valid. A wrapper's inner spec is
// built first, with the same settings.
std::unique_ptr<Codec> make_codec(std::string_view spec, CodecSettings settings = {});

// Names and one-line descriptions of every codec, for help texts.
std::vector<std::pair<std::string, std::string>> codec_catalog();

}  // namespace qccl
QCCL_API_END
