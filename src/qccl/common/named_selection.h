// Choosing items by name from a fixed list, as the experiments' --variants
// and --models options do: case-insensitive, in the order given, with a
// message that names the option and the valid names.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "qccl/common/errors.h"
#include "qccl/common/name_list.h"

namespace qccl {

// The items of `all` named in `requested`, matched without regard to case,
// in the order requested; every item when `requested` is empty. `name_of`
// gives an item's name. Throws InvalidArgument naming `option` for an
// unknown name (listing the valid ones) or a name given twice.
template <class T, class NameOf>
std::vector<T> select_named(const std::vector<T>& all, const std::vector<std::string>& requested,
                            NameOf name_of, const std::string& option) {
  if (requested.empty()) return all;
  const auto lower = [](std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
  };
  std::vector<std::string> valid;
  for (const T& item : all) valid.push_back(name_of(item));
  std::vector<T> chosen;
  std::vector<std::string> chosen_names;
  for (const auto& name : requested) {
    const auto found = std::find_if(all.begin(), all.end(), [&](const T& item) {
      return lower(name_of(item)) == lower(name);
    });
    if (found == all.end()) {
      throw InvalidArgument(option + ": unknown name '" + name + "'; valid: " + joined_names(valid));
    }
    if (contains_name(chosen_names, name_of(*found))) {
      throw InvalidArgument(option + ": '" + name_of(*found) + "' is listed twice; name each once");
    }
    chosen.push_back(*found);
    chosen_names.push_back(name_of(*found));
  }
  return chosen;
}

}  // namespace qccl
