#include <vector>

#include "qccl/common/errors.h"
#include "qccl/experiments/intsgd/readers.h"
#include "qccl/data/image_set.h"

namespace qccl::convex {

Dataset read_fashion_mnist_pair(const std::string& directory, int class_a, int class_b) {
  if (class_a < 0 || class_a > 9 || class_b < 0 || class_b > 9 || class_a == class_b) {
    throw InvalidArgument("Fashion-MNIST classes must be two different values in 0..9");
  }
  const data::ImageSet set = data::read_fashion_mnist(directory, data::Split::train);
  const std::size_t pixels = set.pixels_per_image();
  Dataset data;
  data.set_features(pixels);
  std::vector<SparseEntry> entries;
  for (std::size_t i = 0; i < set.size(); ++i) {
    const int label = set.labels[i];
    if (label != class_a && label != class_b) continue;
    entries.clear();
    const unsigned char* image = set.pixels.data() + i * pixels;
    for (std::size_t p = 0; p < pixels; ++p) {
      if (image[p] != 0) entries.push_back({static_cast<std::uint32_t>(p), image[p] / 255.0});
    }
    data.add_row(entries, label == class_b ? 1.0 : -1.0);
  }
  if (data.rows() == 0) throw InvalidArgument(directory + ": no training samples of the two classes");
  return data;
}

}  // namespace qccl::convex
