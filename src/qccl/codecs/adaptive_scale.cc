#include "qccl/codecs/adaptive_scale.h"

#include <cmath>
#include <limits>
#include <string>

#include "qccl/common/errors.h"

namespace qccl {

BlockPartition::BlockPartition(std::span<const std::size_t> sizes)
    : sizes_(sizes.begin(), sizes.end()) {
  if (sizes_.empty()) throw InvalidArgument("a block partition needs at least one block");
  std::size_t next = 0;
  for (std::size_t l = 0; l < sizes_.size(); ++l) {
    if (sizes_[l] == 0) {
      throw InvalidArgument("block " + std::to_string(l) + " of the partition is empty; "
                            "give every block at least one element");
    }
    starts_.push_back(next);
    next += sizes_[l];
  }
}

void BlockPartition::check(std::size_t length, std::string_view what) const {
  if (sizes_.empty()) return;
  const std::size_t total = starts_.back() + sizes_.back();
  if (total != length) {
    throw InvalidArgument(std::string(what) + ": the blocks set with set_blocks() cover " +
                          std::to_string(total) + " elements, but the data has " +
                          std::to_string(length) + "; pass block sizes that add up to it");
  }
}

std::vector<std::size_t> BlockPartition::starts() const {
  return sizes_.empty() ? std::vector<std::size_t>{0} : starts_;
}

AdaptiveScale::AdaptiveScale(double beta, double epsilon) : beta_(beta), epsilon_(epsilon) {
  if (!(beta >= 0 && beta < 1)) throw InvalidArgument("IntSGD needs 0 <= beta < 1");
  if (!(epsilon >= 0 && std::isfinite(epsilon))) throw InvalidArgument("IntSGD needs eps >= 0");
}

void AdaptiveScale::observe(double next_step_size, std::span<const double> block_squared_norms) {
  if (!(next_step_size > 0 && std::isfinite(next_step_size))) {
    throw InvalidArgument("IntSGD: the step size must be positive and finite, got " +
                          std::to_string(next_step_size));
  }
  if (ready_ && block_squared_norms.size() != moving_average_.size()) {
    throw InvalidArgument("IntSGD: the update has " + std::to_string(block_squared_norms.size()) +
                          " blocks after " + std::to_string(moving_average_.size()) +
                          " before; keep the partition fixed for the whole run");
  }
  for (std::size_t l = 0; l < block_squared_norms.size(); ++l) {
    if (!std::isfinite(block_squared_norms[l])) {
      throw InvalidArgument("IntSGD: the update x_k - x_(k-1) of block " + std::to_string(l) +
                            " is not finite");
    }
  }
  moving_average_.resize(block_squared_norms.size(), 0.0);
  for (std::size_t l = 0; l < block_squared_norms.size(); ++l) {
    moving_average_[l] = beta_ * moving_average_[l] + (1 - beta_) * block_squared_norms[l];
  }
  step_size_ = next_step_size;
  ready_ = true;
}

double AdaptiveScale::alpha(std::size_t block, std::size_t block_size, int ranks) const {
  const double d = static_cast<double>(block_size);
  const double eta = step_size_;
  const double denominator =
      std::sqrt(2.0 * ranks * moving_average_.at(block) + eta * eta * d * epsilon_ * epsilon_);
  if (denominator == 0.0) return std::numeric_limits<double>::infinity();
  return eta * std::sqrt(d) / denominator;
}

std::vector<double> AdaptiveScale::state() const {
  std::vector<double> state{ready_ ? 1.0 : 0.0, step_size_};
  state.insert(state.end(), moving_average_.begin(), moving_average_.end());
  return state;
}

void AdaptiveScale::restore(std::span<const double> state) {
  if (state.size() < 2) throw InvalidArgument("IntSGD: the saved scale state is truncated");
  ready_ = state[0] != 0.0;
  step_size_ = state[1];
  moving_average_.assign(state.begin() + 2, state.end());
}

}  // namespace qccl
