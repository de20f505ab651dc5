// The codec catalog as help text, for the commands that take a --codec.
#pragma once

#include <string>

namespace qccl::tools {

// "codec spec: NAME or NAME:key=value,...; codecs:" and a line per codec.
std::string codec_list();

}  // namespace qccl::tools
