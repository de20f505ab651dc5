// Lists of valid names (models, optimizers, codecs) for checks and for the
// messages that name the valid choices.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace qccl {

// "a, b, c".
inline std::string joined_names(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

inline bool contains_name(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace qccl
