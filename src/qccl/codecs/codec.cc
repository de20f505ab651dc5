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

}  // namespace qccl
