#include "qccl/codecs/sign/vote_count_reduction.h"

#include <cstdint>
#include <cstdlib>

#include "qccl/codecs/kernels/kernels.h"
#include "qccl/codecs/levels.h"
#include "qccl/common/errors.h"

namespace qccl {

std::size_t vote_counter_bytes(int ranks) { return ranks <= 127 ? 1 : 4; }

namespace {

template <class Int>
class VoteCountReduction final : public Reduction {
 public:
  VoteCountReduction(std::string name, int ranks) : name_(std::move(name)), ranks_(ranks) {}

  std::string name() const override { return name_; }
  std::size_t max_encoded_bytes(std::size_t count) const override { return count * sizeof(Int); }

  std::size_t encode(std::span<const float> in, std::size_t, std::span<std::byte> out) override {
    Int* __restrict votes = reinterpret_cast<Int*>(out.data());
    const float* __restrict x = in.data();
    for (std::size_t i = 0; i < in.size(); ++i) votes[i] = static_cast<Int>(x[i] >= 0.0f ? 1 : -1);
    return in.size() * sizeof(Int);
  }

  // The count, checked against the rank count.
  void decode(std::span<const std::byte> in, std::size_t, std::span<float> out) override {
    const Int* votes = checked(in, out.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (std::abs(static_cast<std::int64_t>(votes[i])) > ranks_) {
        throw CommError(name_ + ": a vote count of " + std::to_string(votes[i]) + " among " +
                        std::to_string(ranks_) + " ranks (corrupt message?)");
      }
      out[i] = static_cast<float>(votes[i]);
    }
  }

  // One rank's own encoding: its signs, +1 or -1.
  void decode_contribution(std::span<const std::byte> in, std::size_t,
                           std::span<float> out) override {
    const Int* votes = checked(in, out.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (votes[i] != 1 && votes[i] != -1) {
        throw CommError(name_ + ": a rank's own vote is " + std::to_string(votes[i]) +
                        ", not +1 or -1");
      }
      out[i] = static_cast<float>(votes[i]);
    }
  }

  std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                     std::size_t accum_bytes, const ReduceContext& context) override {
    const Int* in = checked(incoming, context.count);
    checked(accum.first(accum_bytes), context.count);
    Int* acc = reinterpret_cast<Int*>(accum.data());
    bool within = false;
    if constexpr (sizeof(Int) == 1) {
      within = kernels::add_i8_checked(acc, in, context.count, ranks_);
    } else {
      within = kernels::add_i32_checked(acc, in, context.count, ranks_);
    }
    if (!within) {
      throw_corrupt_partial_sum(name_, context, "exceeds the " + std::to_string(ranks_) + " ranks");
    }
    return accum_bytes;
  }

 private:
  const Int* checked(std::span<const std::byte> bytes, std::size_t count) const {
    require_chunk_bytes(name_, bytes.size(), count * sizeof(Int), count);
    return reinterpret_cast<const Int*>(bytes.data());
  }

  std::string name_;
  int ranks_;
};

}  // namespace

std::unique_ptr<Reduction> make_vote_count_reduction(std::string name, int ranks) {
  if (vote_counter_bytes(ranks) == 1) {
    return std::make_unique<VoteCountReduction<std::int8_t>>(std::move(name), ranks);
  }
  return std::make_unique<VoteCountReduction<std::int32_t>>(std::move(name), ranks);
}

}  // namespace qccl
