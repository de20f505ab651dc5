// The settings each codec's paper recommends, or ran its headline results
// with: what `qccl codecs` shows beside each codec's properties, so that a
// user starts from a setting with evidence behind it.
#pragma once

#include <string>
#include <vector>

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

struct RecommendedSetting {
  std::string codec;   // the catalogue's name: "global-qsgd"
  std::string spec;    // a spec CodecSpec::parse accepts: "global-qsgd:bits=8,dither=exp"
  std::string source;  // the paper and where in it: "Global-QSGD (arXiv:2305.18627) §6"
  std::string note;    // what the setting needs of the rest of the run; may be empty
};

// Every codec of codec_catalog() has at least one, in the catalogue's order.
std::vector<RecommendedSetting> recommended_settings();

}  // namespace qccl
QCCL_API_END
