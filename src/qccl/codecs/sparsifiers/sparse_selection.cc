#include "qccl/codecs/sparsifiers/sparse_selection.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>

#include "qccl/common/errors.h"

namespace qccl {

std::size_t sparse_count(double ratio, std::size_t elements) {
  if (elements == 0) return 0;
  const double wanted = std::ceil(ratio * static_cast<double>(elements) * (1.0 - 1e-12));
  if (!(wanted >= 1.0)) return 1;
  return std::min(elements, static_cast<std::size_t>(wanted));
}

double read_sparse_ratio(CodecParams& params, std::string_view codec) {
  const double ratio = params.number("ratio", 0.0, 1.0, 0.01);
  if (ratio <= 0.0) {
    throw InvalidArgument("codec " + std::string(codec) + ": ratio=0 keeps nothing; give the "
                          "fraction of elements to keep in (0, 1], e.g. ratio=0.01");
  }
  return ratio;
}

namespace {

// One unnamed slice over all `length` elements.
std::vector<TensorSlice> whole_vector(std::size_t length) {
  return {TensorSlice{"", {static_cast<std::int64_t>(length)}, 0, length}};
}

}  // namespace

std::vector<TensorSlice> selection_tensors(const TensorLayout& layout, std::size_t length) {
  if (layout.unnamed() || layout.total() == length) return layout.tensors(length);
  return whole_vector(length);
}

SelectionScope read_selection_scope(CodecParams& params) {
  return params.choice("select", {"group", "tensor"}, "group") == "group" ? SelectionScope::group
                                                                          : SelectionScope::tensor;
}

std::string_view selection_scope_name(SelectionScope scope) {
  return scope == SelectionScope::group ? "group" : "tensor";
}

std::vector<TensorSlice> selection_slices(const TensorLayout& layout, std::size_t length,
                                          SelectionScope scope) {
  if (scope == SelectionScope::tensor) return selection_tensors(layout, length);
  return whole_vector(length);
}

namespace {

std::uint32_t magnitude_bits(float x) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  return bits & 0x7FFFFFFFU;
}

}  // namespace

void select_largest(std::span<const float> x, std::size_t k, std::size_t offset,
                    std::vector<std::size_t>& selected, std::vector<std::uint32_t>& scratch) {
  const std::size_t d = x.size();
  if (k >= d) {
    for (std::size_t j = 0; j < d; ++j) selected.push_back(offset + j);
    return;
  }
  if (k == 0) return;
  scratch.resize(d);
  for (std::size_t j = 0; j < d; ++j) scratch[j] = magnitude_bits(x[j]);
  const auto kth = scratch.begin() + static_cast<std::ptrdiff_t>(k - 1);
  std::nth_element(scratch.begin(), kth, scratch.end(), std::greater<>());
  const std::uint32_t threshold = *kth;
  std::size_t above = 0;
  for (std::size_t j = 0; j < d; ++j) above += magnitude_bits(x[j]) > threshold ? 1 : 0;
  std::size_t ties = k - above;  // elements equal to the threshold still to take
  for (std::size_t j = 0; j < d; ++j) {
    const std::uint32_t m = magnitude_bits(x[j]);
    if (m > threshold || (m == threshold && ties > 0)) {
      if (m == threshold) --ties;
      selected.push_back(offset + j);
    }
  }
}

std::uint64_t uniform_below(const CounterRng& rng, std::uint64_t draw, std::uint64_t bound) {
  // The 2^64 − (2^64 mod bound) values from reject_below on are a whole
  // number of periods of r mod bound.
  const std::uint64_t reject_below = (0 - bound) % bound;
  for (std::uint64_t attempt = 0;; ++attempt) {
    const std::uint64_t r = rng.bits64((draw << 32) + attempt);
    if (r >= reject_below) return r % bound;
  }
}

void select_uniform(const CounterRng& rng, std::size_t d, std::size_t k, std::size_t offset,
                    std::vector<std::size_t>& selected, std::vector<std::uint64_t>& bitmap) {
  if (k >= d) {
    for (std::size_t j = 0; j < d; ++j) selected.push_back(offset + j);
    return;
  }
  bitmap.assign((d + 63) / 64, 0);
  auto taken = [&](std::size_t j) { return (bitmap[j / 64] >> (j % 64)) & 1U; };
  auto take = [&](std::size_t j) { bitmap[j / 64] |= std::uint64_t{1} << (j % 64); };
  for (std::size_t i = 0; i < k; ++i) {
    const std::size_t top = d - k + i;  // draw i picks in [0, top]
    const auto pick = static_cast<std::size_t>(uniform_below(rng, i, top + 1));
    take(taken(pick) ? top : pick);
  }
  for (std::size_t w = 0; w < bitmap.size(); ++w) {
    for (std::uint64_t bits = bitmap[w]; bits != 0; bits &= bits - 1) {
      selected.push_back(offset + w * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
    }
  }
}

}  // namespace qccl
