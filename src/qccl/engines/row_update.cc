#include "qccl/engines/row_update.h"

#include "qccl/common/errors.h"

namespace qccl::engines {

std::vector<std::string> row_update_names() { return {"dense", "lazy-adam", "rowwise-adagrad"}; }

std::string name_of(RowUpdate update) {
  return row_update_names()[static_cast<std::size_t>(update)];
}

RowUpdate row_update_from_name(const std::string& name) {
  const auto names = row_update_names();
  for (std::size_t k = 0; k < names.size(); ++k) {
    if (names[k] == name) return static_cast<RowUpdate>(k);
  }
  throw InvalidArgument("unknown row update '" + name + "'; valid: dense, lazy-adam, rowwise-adagrad");
}

}  // namespace qccl::engines
