// Grayscale images as PNG files (zlib, which the data layer already
// links), for the GAN experiment's sample grids: no image library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace qccl::tools {

// An 8-bit grayscale PNG (color type 0, no interlace, filter 0 on every
// row) of `width` × `height` pixels, row-major. Throws InvalidArgument when
// the pixel count does not match.
std::string encode_png_gray(std::size_t width, std::size_t height,
                            std::span<const std::uint8_t> pixels);

// `count` images of `rows` × `cols` pixels in [0, 1] (values outside are
// clipped) tiled `columns` to a row, `padding` black pixels around each:
// the grid's width and height, and its 8-bit pixels.
struct GrayImage {
  std::size_t width = 0, height = 0;
  std::vector<std::uint8_t> pixels;
};
GrayImage tile_images(std::span<const float> images, std::size_t count, std::size_t rows,
                      std::size_t cols, std::size_t columns, std::size_t padding);

}  // namespace qccl::tools
