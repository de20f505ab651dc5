#include "qccl/codecs/tensor_layout.h"

#include <set>

#include "qccl/common/counter_rng.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

std::size_t product(std::span<const std::int64_t> shape) {
  std::size_t elements = 1;
  for (std::int64_t dimension : shape) {
    if (dimension < 0) throw InvalidArgument("tensor layout: a shape has a negative dimension");
    elements *= static_cast<std::size_t>(dimension);
  }
  return elements;
}

std::string shape_text(std::span<const std::int64_t> shape) {
  std::string text;
  for (std::int64_t d : shape) text += (text.empty() ? "" : "x") + std::to_string(d);
  return text.empty() ? "scalar" : text;
}

}  // namespace

TensorLayout::TensorLayout(std::vector<TensorSlice> tensors) : tensors_(std::move(tensors)) {
  std::set<std::string> names;
  for (const TensorSlice& t : tensors_) {
    if (t.name.empty()) throw InvalidArgument("tensor layout: every tensor needs a name");
    if (!names.insert(t.name).second) {
      throw InvalidArgument("tensor layout: the name '" + t.name + "' is used twice");
    }
    if (t.offset != total_) {
      throw InvalidArgument("tensor layout: '" + t.name + "' starts at element " +
                            std::to_string(t.offset) + ", not right after the previous tensor (" +
                            std::to_string(total_) + ")");
    }
    if (t.elements != product(t.shape)) {
      throw InvalidArgument("tensor layout: '" + t.name + "' has " + std::to_string(t.elements) +
                            " elements but shape " + shape_text(t.shape));
    }
    total_ += t.elements;
  }
}

TensorLayout TensorLayout::of_sizes(std::span<const std::size_t> sizes) {
  std::vector<TensorSlice> tensors;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    tensors.push_back({"block" + std::to_string(i), {static_cast<std::int64_t>(sizes[i])}, offset,
                       sizes[i]});
    offset += sizes[i];
  }
  return TensorLayout(std::move(tensors));
}

TensorLayout TensorLayout::of_shapes(std::span<const std::string> names,
                                     std::span<const std::vector<std::int64_t>> shapes) {
  if (names.size() != shapes.size()) {
    throw InvalidArgument("tensor layout: " + std::to_string(names.size()) + " names for " +
                          std::to_string(shapes.size()) + " shapes");
  }
  std::vector<TensorSlice> tensors;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::size_t elements = product(shapes[i]);
    tensors.push_back({names[i], shapes[i], offset, elements});
    offset += elements;
  }
  return TensorLayout(std::move(tensors));
}

std::vector<TensorSlice> TensorLayout::tensors(std::size_t length) const {
  if (unnamed()) return {TensorSlice{"", {static_cast<std::int64_t>(length)}, 0, length}};
  return tensors_;
}

void TensorLayout::check(std::size_t length, std::string_view what) const {
  if (!unnamed() && length != total_) {
    throw InvalidArgument(std::string(what) + ": the tensors of its layout hold " +
                          std::to_string(total_) + " elements but the data has " +
                          std::to_string(length) +
                          "; pass exactly the elements of the tensors it was given");
  }
}

std::uint64_t TensorLayout::fingerprint() const {
  std::uint64_t hash = mix64(tensors_.size());
  for (const TensorSlice& t : tensors_) {
    for (char c : t.name) hash = mix64(hash ^ static_cast<unsigned char>(c));
    for (std::int64_t d : t.shape) hash = mix64(hash ^ static_cast<std::uint64_t>(d));
    hash = mix64(hash ^ 0x9E3779B97F4A7C15ULL);
  }
  return hash;
}

}  // namespace qccl
