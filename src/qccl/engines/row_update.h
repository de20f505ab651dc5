// The ways an optimizer's parameter group can take a gradient that comes
// as rows (an embedding table's: the data-parallel engine's sparse_means);
// the updates themselves are in row_updates.h.
#pragma once

#include <string>
#include <vector>

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl::engines {

// How a parameter group updates a parameter whose gradient comes as rows.
enum class RowUpdate {
  dense,            // as the dense gradient the rows stand for: every row moves
  lazy_adam,        // Adam on the given rows only (PyTorch's SparseAdam)
  rowwise_adagrad,  // one accumulator per row (DLRM-style tables)
};
// "dense", "lazy-adam", "rowwise-adagrad".
std::vector<std::string> row_update_names();
std::string name_of(RowUpdate update);
// InvalidArgument listing the names for an unknown one.
RowUpdate row_update_from_name(const std::string& name);

}  // namespace qccl::engines
QCCL_API_END
