#include "qccl/codecs/sign/sign_levels_encoding.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "qccl/codecs/levels.h"
#include "qccl/codecs/sign/sign_bits.h"
#include "qccl/common/errors.h"

namespace qccl {

std::size_t sign_header_bytes(SignHeader header) {
  switch (header) {
    case SignHeader::none: return 0;
    case SignHeader::scale: return sizeof(float);
    case SignHeader::two_means: return 2 * sizeof(float);
  }
  return 0;
}

namespace {

class SignLevelsEncoding final : public Encoding {
 public:
  explicit SignLevelsEncoding(SignLevelsSetup setup)
      : setup_(std::move(setup)), header_bytes_(sign_header_bytes(setup_.header)) {
    if (setup_.bounds.size() < 2 || setup_.levels.size() + 1 != setup_.bounds.size() ||
        !std::is_sorted(setup_.bounds.begin(), setup_.bounds.end())) {
      throw InvalidArgument(setup_.name + ": tensor bounds and levels do not match");
    }
    for (std::size_t t = 0; t + 1 < setup_.bounds.size(); ++t) {
      nonempty_tensors_ += setup_.bounds[t] < setup_.bounds[t + 1];
    }
  }

  std::string name() const override { return setup_.name; }
  // Whole bytes of bits per chunk, so the chunks of a vector add up to one
  // bit per element.
  std::size_t granularity() const override { return 8; }
  // A chunk of `count` elements overlaps at most min(count, tensors) tensors.
  std::size_t max_encoded_bytes(std::size_t count) const override {
    return header_bytes_ * std::min(count, nonempty_tensors_) + sign_bytes(count);
  }

  std::size_t encode(std::span<const float> in, std::size_t first,
                     std::span<std::byte> out) override {
    std::size_t at = 0;
    for_each_tensor(first, in.size(), [&](std::size_t t, std::size_t, std::size_t) {
      const SignLevels& levels = setup_.levels[t];
      std::memcpy(out.data() + at, &levels.positive, sizeof(float));
      if (setup_.header == SignHeader::two_means) {
        std::memcpy(out.data() + at + sizeof(float), &levels.negative, sizeof(float));
      }
      at += header_bytes_;
    });
    pack_signs(in.data(), reinterpret_cast<std::uint8_t*>(out.data() + at), in.size());
    return at + sign_bytes(in.size());
  }

  void decode(std::span<const std::byte> in, std::size_t first, std::span<float> out) override {
    const std::size_t count = out.size();
    std::size_t tensors = 0;
    for_each_tensor(first, count, [&](std::size_t, std::size_t, std::size_t) { ++tensors; });
    const std::size_t headers = tensors * header_bytes_;
    require_chunk_bytes(setup_.name, in.size(), headers + sign_bytes(count), count);
    const auto* bits = reinterpret_cast<const std::uint8_t*>(in.data() + headers);
    if (!sign_padding_is_clear(bits, count)) {
      throw CommError(setup_.name + ": a chunk of " + std::to_string(count) +
                      " sign bits has bits set past its end (corrupt message?)");
    }
    if (setup_.header == SignHeader::none) {
      unpack_signs(bits, 0, out.data(), count, 1.0f, -1.0f);
      return;
    }
    std::size_t at = 0;
    for_each_tensor(first, count, [&](std::size_t, std::size_t begin, std::size_t end) {
      const SignLevels levels = read_levels(in.subspan(at, header_bytes_));
      at += header_bytes_;
      unpack_signs(bits, begin - first, out.data() + (begin - first), end - begin,
                   levels.positive, levels.negative);
    });
  }

  // One rank's encoding already stands for its own Q(x).
  void decode_contribution(std::span<const std::byte> in, std::size_t first,
                           std::span<float> out) override {
    decode(in, first, out);
  }


 private:
  // f(t, begin, end) for each tensor t that elements [first, first + count)
  // overlap, with the overlap [begin, end), in tensor order. Without
  // headers the chunk is one piece.
  template <class F>
  void for_each_tensor(std::size_t first, std::size_t count, F&& f) const {
    if (setup_.header == SignHeader::none || count == 0) return;
    const std::size_t end = first + count;
    const auto& bounds = setup_.bounds;
    if (end > bounds.back()) {
      throw InvalidArgument(setup_.name + ": a chunk of elements " + std::to_string(first) + ".." +
                            std::to_string(end) + " lies past the " +
                            std::to_string(bounds.back()) + " elements of its tensors");
    }
    std::size_t t = static_cast<std::size_t>(
        std::upper_bound(bounds.begin(), bounds.end() - 1, first) - bounds.begin() - 1);
    for (; t + 1 < bounds.size() && bounds[t] < end; ++t) {
      const std::size_t begin = std::max(bounds[t], first), stop = std::min(bounds[t + 1], end);
      if (begin < stop) f(t, begin, stop);
    }
  }

  // A tensor's levels from a chunk header, checked: finite, positive level
  // >= 0, negative level <= 0 (a scale s stands for +s / -s).
  SignLevels read_levels(std::span<const std::byte> header) const {
    SignLevels levels;
    std::memcpy(&levels.positive, header.data(), sizeof(float));
    if (setup_.header == SignHeader::two_means) {
      std::memcpy(&levels.negative, header.data() + sizeof(float), sizeof(float));
    } else {
      levels.negative = -levels.positive;
    }
    if (!std::isfinite(levels.positive) || !std::isfinite(levels.negative) ||
        !(levels.positive >= 0.0f) || !(levels.negative <= 0.0f)) {
      throw CommError(setup_.name + ": a chunk header holds the levels " +
                      std::to_string(levels.positive) + " / " + std::to_string(levels.negative) +
                      ", which no input gives (corrupt message?)");
    }
    return levels;
  }

  SignLevelsSetup setup_;
  std::size_t header_bytes_;
  std::size_t nonempty_tensors_ = 0;
};

}  // namespace

std::unique_ptr<Encoding> make_sign_levels_encoding(SignLevelsSetup setup) {
  return std::make_unique<SignLevelsEncoding>(std::move(setup));
}

}  // namespace qccl
