#include "qccl/codecs/codec.h"

#include "qccl/common/errors.h"

namespace qccl {

void Codec::load_state(std::span<const std::byte> state) {
  if (!state.empty()) {
    throw InvalidArgument("codec " + spec() + " keeps no state, but was given " +
                          std::to_string(state.size()) +
                          " bytes of it: the checkpoint was written with another codec");
  }
}

void feed_sgd_step(Codec& codec, std::span<const float> result, double step_size) {
  if (!codec.wants_step_feedback()) return;
  std::vector<float> update(result.size());
  const auto eta = static_cast<float>(step_size);
  for (std::size_t i = 0; i < result.size(); ++i) update[i] = -eta * result[i];
  codec.observe_step(step_size, update);
}

}  // namespace qccl
