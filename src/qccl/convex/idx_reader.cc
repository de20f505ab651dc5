#include <zlib.h>

#include <array>
#include <memory>
#include <vector>

#include "qccl/common/errors.h"
#include "qccl/convex/readers.h"

namespace qccl::convex {
namespace {

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};

// The whole decompressed content of a gzip file.
std::vector<unsigned char> read_gzip(const std::string& path) {
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  if (!file) {
    throw InvalidArgument("cannot open '" + path + "' (install Debian's dataset-fashion-mnist, "
                          "or point to a directory with the gzipped IDX files)");
  }
  std::vector<unsigned char> bytes;
  std::array<unsigned char, 1 << 16> buffer;
  while (true) {
    const int got = gzread(file.get(), buffer.data(), buffer.size());
    if (got < 0) throw InvalidArgument("'" + path + "' is not a valid gzip file");
    if (got == 0) break;
    bytes.insert(bytes.end(), buffer.begin(), buffer.begin() + got);
  }
  return bytes;
}

std::uint32_t big_endian(const std::vector<unsigned char>& bytes, std::size_t at) {
  return (std::uint32_t{bytes[at]} << 24) | (std::uint32_t{bytes[at + 1]} << 16) |
         (std::uint32_t{bytes[at + 2]} << 8) | std::uint32_t{bytes[at + 3]};
}

// IDX: magic 0x0000 0x08 (unsigned byte) <rank>, then <rank> big-endian
// dimensions, then the data. Returns the dimensions; checks the size.
std::vector<std::size_t> idx_dimensions(const std::vector<unsigned char>& bytes, int rank,
                                        const std::string& path) {
  if (bytes.size() < 4 + 4 * static_cast<std::size_t>(rank) ||
      big_endian(bytes, 0) != 0x00000800U + static_cast<std::uint32_t>(rank)) {
    throw InvalidArgument("'" + path + "' is not an IDX file of rank " + std::to_string(rank));
  }
  std::vector<std::size_t> dims;
  std::size_t total = 1;
  for (int i = 0; i < rank; ++i) {
    dims.push_back(big_endian(bytes, 4 + 4 * static_cast<std::size_t>(i)));
    total *= dims.back();
  }
  if (bytes.size() != 4 + 4 * static_cast<std::size_t>(rank) + total) {
    throw InvalidArgument("'" + path + "' is truncated or has trailing data: expected " +
                          std::to_string(total) + " values");
  }
  return dims;
}

}  // namespace

Dataset read_fashion_mnist_pair(const std::string& directory, int class_a, int class_b) {
  if (class_a < 0 || class_a > 9 || class_b < 0 || class_b > 9 || class_a == class_b) {
    throw InvalidArgument("Fashion-MNIST classes must be two different values in 0..9");
  }
  const std::string images_path = directory + "/train-images-idx3-ubyte.gz";
  const std::string labels_path = directory + "/train-labels-idx1-ubyte.gz";
  const auto images = read_gzip(images_path);
  const auto labels = read_gzip(labels_path);
  const auto image_dims = idx_dimensions(images, 3, images_path);
  const auto label_dims = idx_dimensions(labels, 1, labels_path);
  if (image_dims[0] != label_dims[0]) {
    throw InvalidArgument("'" + images_path + "' has " + std::to_string(image_dims[0]) +
                          " images but '" + labels_path + "' " + std::to_string(label_dims[0]) +
                          " labels");
  }
  const std::size_t pixels = image_dims[1] * image_dims[2];
  Dataset data;
  data.set_features(pixels);
  std::vector<SparseEntry> entries;
  for (std::size_t i = 0; i < label_dims[0]; ++i) {
    const int label = labels[8 + i];
    if (label != class_a && label != class_b) continue;
    entries.clear();
    const unsigned char* image = images.data() + 16 + i * pixels;
    for (std::size_t p = 0; p < pixels; ++p) {
      if (image[p] != 0) entries.push_back({static_cast<std::uint32_t>(p), image[p] / 255.0});
    }
    data.add_row(entries, label == class_b ? 1.0 : -1.0);
  }
  if (data.rows() == 0) throw InvalidArgument(labels_path + ": no samples of the two classes");
  return data;
}

}  // namespace qccl::convex
