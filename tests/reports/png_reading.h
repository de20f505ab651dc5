// Reads the PNG files an SVG rasteriser writes (8-bit RGB or RGBA, not
// interlaced), for the checks on what was drawn.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qccl::tools::test {

struct RgbaImage {
  std::size_t width = 0, height = 0;
  std::vector<std::uint8_t> pixels;  // RGBA, row by row

  const std::uint8_t* at(std::size_t x, std::size_t y) const {
    return &pixels[4 * (y * width + x)];
  }
  // Whether the pixel is not (near) white, or transparent.
  bool inked(std::size_t x, std::size_t y) const {
    const auto* p = at(x, y);
    return p[3] > 32 && (p[0] < 224 || p[1] < 224 || p[2] < 224);
  }
};

// Throws std::runtime_error for a file that is not such a PNG.
RgbaImage read_png(const std::string& path);

}  // namespace qccl::tools::test
