#include "qccl/data/epoch_order.h"

#include <numeric>
#include <utility>

#include "qccl/common/counter_rng.h"
#include "qccl/common/errors.h"

namespace qccl::data {

std::vector<std::uint32_t> epoch_permutation(std::size_t n, std::uint64_t seed, std::uint64_t epoch) {
  if (n > 0xFFFFFFFFULL) throw InvalidArgument("epoch order: at most 2^32 - 1 samples");
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0U);
  const CounterRng rng(seed, epoch, 0, 0, RngStream::shuffle);
  for (std::size_t i = n; i > 1; --i) {
    // A draw in [0, i): the modulo bias, at most i/2^64, is far below
    // anything a training run can notice.
    const auto r = static_cast<std::size_t>(rng.bits64(i) % i);
    std::swap(order[i - 1], order[r]);
  }
  return order;
}

}  // namespace qccl::data
