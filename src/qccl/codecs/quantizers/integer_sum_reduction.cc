#include "qccl/codecs/quantizers/integer_sum_reduction.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "qccl/codecs/group_data_path.h"
#include "qccl/codecs/kernels/element_ops.h"
#include "qccl/codecs/kernels/kernels.h"
#include "qccl/codecs/levels.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

// Sums with a bound: every valid partial sum has |s| <= n·c, so anything
// larger (or an overflow) means a corrupt message.
template <class Int>
bool add_checked(Int* accum, const Int* incoming, std::size_t count, std::int64_t limit) {
  bool inside = true;
  for (std::size_t i = 0; i < count; ++i) {
    std::int64_t sum;
    if constexpr (sizeof(Int) == 8) {
      if (__builtin_add_overflow(static_cast<std::int64_t>(accum[i]),
                                 static_cast<std::int64_t>(incoming[i]), &sum)) {
        return false;
      }
    } else {
      sum = static_cast<std::int64_t>(accum[i]) + incoming[i];
    }
    inside &= sum <= limit && sum >= -limit;
    accum[i] = static_cast<Int>(sum);
  }
  return inside;
}

// Algorithm 1's aggregation on `Int` chunks (one element per wire integer,
// no header): encode = clip(Int(α_l·x)) per block l (int_rounding.h),
// reduce = checked integer addition, decode = Σ/(n·α_l). α = +inf decodes to
// 0: every coordinate was clipped and carries no magnitude information.
template <class Int>
class IntegerSum final : public IntegerSumReduction, public SummedIntegers {
 public:
  explicit IntegerSum(IntegerSumSetup setup)
      : setup_(std::move(setup)),
        limit_(setup_.clip * static_cast<std::int64_t>(setup_.ranks)) {
    if (setup_.block_starts.empty() || setup_.block_starts.size() != setup_.alphas.size() ||
        setup_.block_starts.front() != 0) {
      throw InvalidArgument(setup_.name + ": needs one scale per block, the first at element 0");
    }
    for (double alpha : setup_.alphas) {
      if (!(alpha > 0)) throw InvalidArgument(setup_.name + ": scales must be positive");
      mean_factor_.push_back(std::isinf(alpha) ? 0.0 : 1.0 / (setup_.ranks * alpha));
      // The vectorised fp32 rounding serves int8/int32 while α is an fp32
      // number; an infinite α (every non-zero clips) takes the exact path.
      fast_.push_back(sizeof(Int) < 8 && std::isfinite(static_cast<float>(alpha)));
    }
    make_form_blocks();
  }

  std::string name() const override { return setup_.name; }
  std::size_t max_encoded_bytes(std::size_t count) const override { return count * sizeof(Int); }
  std::size_t integer_width() const override { return sizeof(Int); }
  std::uint64_t clipped() const override { return clipped_; }
  std::uint64_t largest_sent() const override { return largest_sent_; }
  std::uint64_t largest_sum() const override { return largest_sum_; }

  std::size_t encode(std::span<const float> in, std::size_t first, std::span<std::byte> out) override {
    Int* q = reinterpret_cast<Int*>(out.data());
    for_each_block(first, in.size(), [&](std::size_t l, std::size_t offset, std::size_t count) {
      const std::size_t global = first + offset;
      if (setup_.source.empty() && fast_[l]) {
        const auto result = round_kernel(in.data() + offset, q + offset, count, l, global);
        clipped_ += result.clipped;
        largest_sent_ = std::max(largest_sent_, static_cast<std::uint64_t>(result.largest));
        return;
      }
      if (setup_.source.empty()) {
        clipped_ += round_scaled<float, Int>(in.subspan(offset, count), setup_.alphas[l],
                                             setup_.rounding, setup_.clip, setup_.rng, global,
                                             q + offset);
      } else {
        clipped_ += round_scaled<double, Int>(setup_.source.subspan(global, count),
                                              setup_.alphas[l], setup_.rounding, setup_.clip,
                                              setup_.rng, global, q + offset);
      }
      largest_sent_ = std::max(largest_sent_, largest_magnitude(q + offset, count));
    });
    if (!setup_.local_integers.empty()) {
      std::memcpy(setup_.local_integers.data() + first * sizeof(Int), q, in.size() * sizeof(Int));
    }
    return in.size() * sizeof(Int);
  }

  std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                     std::size_t accum_bytes, const ReduceContext& context) override {
    check(incoming.size(), context.count);
    check(accum_bytes, context.count);
    auto* acc = reinterpret_cast<Int*>(accum.data());
    const auto* in = reinterpret_cast<const Int*>(incoming.data());
    bool inside;
    if constexpr (std::is_same_v<Int, std::int8_t>) {
      inside = kernels::add_i8_checked(acc, in, context.count, static_cast<std::int32_t>(limit_));
    } else if constexpr (std::is_same_v<Int, std::int32_t>) {
      inside = kernels::add_i32_checked(acc, in, context.count, static_cast<std::int32_t>(limit_));
    } else {
      inside = add_checked(acc, in, context.count, limit_);
    }
    if (!inside) {
      throw_corrupt_partial_sum(setup_.name, context, "exceeds n·c = " + std::to_string(limit_));
    }
    return accum_bytes;
  }

  // Every valid sum has |Σ| <= n·c: a larger one (INT_MIN included) is
  // rejected as corrupt before it is used.
  void decode(std::span<const std::byte> in, std::size_t first, std::span<float> out) override {
    check(in.size(), out.size());
    const Int* sum = reinterpret_cast<const Int*>(in.data());
    std::uint64_t largest = 0;
    for_each_block(first, out.size(), [&](std::size_t l, std::size_t offset, std::size_t count) {
      const double factor = mean_factor_[l];
      if constexpr (sizeof(Int) == 8) {
        for (std::size_t i = offset; i < offset + count; ++i) {
          out[i] = element_ops::wide_level_value(sum[i], factor);
        }
        largest = std::max(largest, largest_magnitude(sum + offset, count));
      } else {
        const auto f = static_cast<float>(factor);
        const std::int64_t block_largest =
            sizeof(Int) == 1
                ? kernels::int_decode_i8(reinterpret_cast<const std::int8_t*>(sum) + offset,
                                         out.data() + offset, count, f)
                : kernels::int_decode_i32(reinterpret_cast<const std::int32_t*>(sum) + offset,
                                          out.data() + offset, count, f);
        largest = std::max(largest, static_cast<std::uint64_t>(block_largest));
      }
    });
    if (largest > static_cast<std::uint64_t>(limit_)) throw_corrupt("a sum", largest, limit_);
    largest_sum_ = std::max(largest_sum_, largest);
    if (!setup_.summed_integers.empty()) {
      std::memcpy(setup_.summed_integers.data() + first * sizeof(Int), sum,
                  out.size() * sizeof(Int));
    }
  }

  // The step's arithmetic where the step keeps no integers of its own
  // (IntDIANA's shifts read them): on int8 and int32 the fast path's (fp32
  // α and 1/(n·α) per block), where every block takes it; on int64 the
  // exact path's (the same in fp64). A device step can then run it.
  std::optional<ElementForm> element_form() const override {
    if (form_blocks_.empty()) return std::nullopt;
    constexpr ElementForm::Code code = sizeof(Int) == 1   ? ElementForm::Code::int_i8_summed
                                       : sizeof(Int) == 4 ? ElementForm::Code::int_i32_summed
                                                          : ElementForm::Code::int_i64_summed;
    ElementForm form{.code = code,
                     .key_low = setup_.rng.key_low(),
                     .key_high = setup_.rng.key_high(),
                     .blocks = form_blocks_.data(),
                     .block_count = form_blocks_.size(),
                     .clip = setup_.clip,
                     .random_rounding = setup_.rounding == IntRounding::random,
                     .limit = limit_,
                     .ranks = setup_.ranks};
    return form;
  }

  // One rank's integers q stand for q/α_l.
  void decode_contribution(std::span<const std::byte> in, std::size_t first,
                           std::span<float> out) override {
    check(in.size(), out.size());
    const Int* q = reinterpret_cast<const Int*>(in.data());
    const std::uint64_t largest = largest_magnitude(q, out.size());
    if (largest > static_cast<std::uint64_t>(setup_.clip)) {
      throw_corrupt("an integer of one rank", largest, setup_.clip);
    }
    for_each_block(first, out.size(), [&](std::size_t l, std::size_t offset, std::size_t count) {
      const double alpha = setup_.alphas[l];
      const double unscale = std::isinf(alpha) ? 0.0 : 1.0 / alpha;
      for (std::size_t i = offset; i < offset + count; ++i) {
        out[i] = saturate_to_fp32(static_cast<double>(q[i]) * unscale);
      }
    });
  }

 private:
  // Calls body(block, offset in chunk, count) for each block piece of the
  // chunk [first, first + count).
  template <class Body>
  void for_each_block(std::size_t first, std::size_t count, Body&& body) const {
    const auto& starts = setup_.block_starts;
    std::size_t l = static_cast<std::size_t>(
        std::upper_bound(starts.begin(), starts.end(), first) - starts.begin() - 1);
    for (std::size_t done = 0; done < count; ++l) {
      const std::size_t end = l + 1 < starts.size() ? starts[l + 1] : first + count;
      const std::size_t piece = std::min(end, first + count) - (first + done);
      body(l, done, piece);
      done += piece;
    }
  }

  kernels::IntRoundResult round_kernel(const float* x, Int* q, std::size_t count,
                                       std::size_t block, std::size_t first) const {
    const auto alpha = static_cast<float>(setup_.alphas[block]);
    const auto limit = static_cast<std::int32_t>(setup_.clip);
    const bool random = setup_.rounding == IntRounding::random;
    const auto& rng = setup_.rng;
    if constexpr (std::is_same_v<Int, std::int8_t>) {
      return kernels::int_round_i8(x, q, count, alpha, limit, random, rng.key_low(),
                                   rng.key_high(), first);
    } else if constexpr (std::is_same_v<Int, std::int32_t>) {
      return kernels::int_round_i32(x, q, count, alpha, limit, random, rng.key_low(),
                                    rng.key_high(), first);
    } else {
      return {};  // never: int64 takes the exact path
    }
  }

  void make_form_blocks() {
    const bool own_integers = !setup_.source.empty() || !setup_.local_integers.empty() ||
                              !setup_.summed_integers.empty();
    const bool every_block_fast = std::find(fast_.begin(), fast_.end(), false) == fast_.end();
    if (own_integers || (sizeof(Int) < 8 && !every_block_fast)) return;
    for (std::size_t l = 0; l < setup_.alphas.size(); ++l) {
      form_blocks_.push_back({.first = setup_.block_starts[l],
                              .alpha = setup_.alphas[l],
                              .mean_step = mean_factor_[l],
                              .own_step = 1.0 / setup_.alphas[l]});
    }
  }

  // In unsigned arithmetic: a corrupt INT64_MIN has magnitude 2^63.
  static std::uint64_t largest_magnitude(const Int* values, std::size_t count) {
    std::uint64_t largest = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const auto v = static_cast<std::uint64_t>(static_cast<std::int64_t>(values[i]));
      largest = std::max(largest, values[i] < 0 ? 0 - v : v);
    }
    return largest;
  }

  [[noreturn]] void throw_corrupt(std::string_view what, std::uint64_t magnitude,
                                  std::int64_t bound) const {
    throw CommError(setup_.name + ": " + std::string(what) + " of magnitude " +
                    std::to_string(magnitude) + " exceeds " + std::to_string(bound) +
                    ", which valid input cannot produce (corrupt message?)");
  }

  void check(std::size_t bytes, std::size_t count) const {
    require_chunk_bytes(setup_.name, bytes, count * sizeof(Int), count);
  }

  IntegerSumSetup setup_;
  std::int64_t limit_;
  std::vector<double> mean_factor_;
  std::vector<bool> fast_;
  std::vector<IntegerBlock> form_blocks_;  // element_form's, where it has one
  std::uint64_t clipped_ = 0, largest_sent_ = 0, largest_sum_ = 0;
};

}  // namespace

std::unique_ptr<IntegerSumReduction> make_integer_sum_reduction(IntegerSumSetup setup) {
  switch (setup.wire) {
    case IntWire::int8: return std::make_unique<IntegerSum<std::int8_t>>(std::move(setup));
    case IntWire::int32: return std::make_unique<IntegerSum<std::int32_t>>(std::move(setup));
    case IntWire::int64: return std::make_unique<IntegerSum<std::int64_t>>(std::move(setup));
  }
  throw InvalidArgument("unknown integer wire type");
}

}  // namespace qccl
