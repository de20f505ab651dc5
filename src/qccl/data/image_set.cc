#include "qccl/data/image_set.h"

#include "qccl/common/errors.h"
#include "qccl/data/idx.h"

namespace qccl::data {

ImageSet read_fashion_mnist(const std::string& directory, Split split) {
  const std::string prefix = directory + (split == Split::train ? "/train" : "/t10k");
  const std::string images_path = prefix + "-images-idx3-ubyte.gz";
  const std::string labels_path = prefix + "-labels-idx1-ubyte.gz";
  const std::string hint =
      "install Debian's dataset-fashion-mnist, or pass the directory holding the gzipped IDX files";
  auto images = read_idx_ubyte(images_path, 3, hint);
  auto labels = read_idx_ubyte(labels_path, 1, hint);
  if (images.dims[0] != labels.dims[0]) {
    throw InvalidArgument("'" + images_path + "' has " + std::to_string(images.dims[0]) +
                          " images but '" + labels_path + "' " + std::to_string(labels.dims[0]) +
                          " labels");
  }
  if (images.dims[0] == 0) throw InvalidArgument("'" + images_path + "' holds no images");
  ImageSet set;
  set.rows = images.dims[1];
  set.cols = images.dims[2];
  for (std::size_t i = 0; i < labels.values.size(); ++i) {
    if (labels.values[i] >= set.classes) {
      throw InvalidArgument("'" + labels_path + "': label " + std::to_string(labels.values[i]) +
                            " of sample " + std::to_string(i) + " is not a class in 0..9");
    }
  }
  set.pixels = std::move(images.values);
  set.labels = std::move(labels.values);
  return set;
}

}  // namespace qccl::data
