#include "qccl/collectives/codec_queue.h"

#include "qccl/collectives/codec_steps.h"
#include "qccl/common/errors.h"

namespace qccl {

CodecQueue::CodecQueue(Encoding& encoding, SlotLayout& layout, std::span<std::byte> work,
                       Source source, Target target, PhaseTimes* phases)
    : encoding_(encoding), layout_(layout), work_(work), source_(source), target_(target),
      phases_(phases), position_(layout.slot_count(), kNotPlanned) {
  if (encoding.identity_layout()) {
    throw InvalidArgument("codec queue: encoding '" + encoding.name() +
                          "' has the identity layout and needs no encoding");
  }
}

void CodecQueue::plan_encodes(std::vector<std::size_t> order) {
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (order[i] >= position_.size() || position_[order[i]] != kNotPlanned) {
      throw InvalidArgument("codec queue: slot " + std::to_string(order[i]) +
                            " planned twice or out of the layout's " +
                            std::to_string(position_.size()) + " slots");
    }
    position_[order[i]] = i;
  }
  order_ = std::move(order);
  encoded_ = 0;
}

void CodecQueue::require_encoded(std::size_t slot) {
  const std::size_t at = position_[slot];
  if (at == kNotPlanned) return;
  while (encoded_ <= at) encode_next();
}

void CodecQueue::finished(std::size_t slot) { to_decode_.push_back(slot); }

bool CodecQueue::step() {
  if (encoded_ < order_.size()) {
    encode_next();
    return true;
  }
  if (decoded_ < to_decode_.size()) {
    decode(to_decode_[decoded_++]);
    return true;
  }
  return false;
}

void CodecQueue::drain() {
  while (step()) {
  }
}

void CodecQueue::encode_next() {
  PhaseScope timed(phases_, &PhaseTimes::encode);
  encode_slots(encoding_, layout_, {order_[encoded_], 1}, source_.input, source_.first, work_,
               source_.own);
  ++encoded_;
}

void CodecQueue::decode(std::size_t slot) {
  require_encoded(slot);  // the output may be the input: never decode over unread elements
  PhaseScope timed(phases_, &PhaseTimes::decode);
  decode_slots(encoding_, layout_, work_, {slot, 1}, target_.output, target_.first);
}

}  // namespace qccl
