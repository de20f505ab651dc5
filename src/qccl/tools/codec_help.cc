#include "qccl/tools/codec_help.h"

#include "qccl/codecs/registry/codec_registry.h"

namespace qccl::tools {

std::string codec_list() {
  std::string text = "codec spec: NAME or NAME:key=value,...; codecs:";
  for (const auto& [name, description] : codec_catalog()) text += "\n  " + name + ": " + description;
  return text;
}

}  // namespace qccl::tools
