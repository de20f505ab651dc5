// How a model made of blocks lets an engine run each block: the model's
// forward hands every block's input and the block's own forward function to
// a BlockRunner, which may gather the block's parameters first, run it, and
// release them again (the sharded engine, sharded.h); with no runner the
// model calls its blocks directly.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <functional>

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl::engines {

// A block's forward on its input, with whatever else it needs (a mask)
// bound in; it reads the block's parameters as they are when it is called.
using BlockForward = std::function<torch::Tensor(const torch::Tensor&)>;

class BlockRunner {
 public:
  virtual ~BlockRunner() = default;
  // The output of block `block` (its index in forward order) on `input`.
  virtual torch::Tensor run(std::size_t block, const torch::Tensor& input,
                            const BlockForward& forward) = 0;
};

}  // namespace qccl::engines
QCCL_API_END
