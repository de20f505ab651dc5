// Labelled greyscale images (Fashion-MNIST) for the training engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace qccl::data {

struct ImageSet {
  std::size_t rows = 0, cols = 0;      // pixels per image: rows * cols
  std::vector<std::uint8_t> pixels;    // image i at [i*rows*cols, (i+1)*rows*cols)
  std::vector<std::uint8_t> labels;    // one per image, < classes
  int classes = 10;

  std::size_t size() const { return labels.size(); }
  std::size_t pixels_per_image() const { return rows * cols; }
};

enum class Split { train, test };

// Reads Fashion-MNIST's gzipped IDX pair for `split` from `directory`
// (Debian's dataset-fashion-mnist installs it in
// /usr/share/datasets/fashion-mnist). Throws InvalidArgument naming the file
// when one is missing or corrupt, the counts differ, or a label is not 0..9.
ImageSet read_fashion_mnist(const std::string& directory, Split split);

inline constexpr const char* kFashionMnistDirectory = "/usr/share/datasets/fashion-mnist";

}  // namespace qccl::data
