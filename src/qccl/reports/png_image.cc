#include "qccl/reports/png_image.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>

#include "qccl/common/errors.h"

namespace qccl::tools {
namespace {

void put_u32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

// A chunk: length, type, data, and the CRC-32 of type and data (PNG §5.3).
void put_chunk(std::string& out, const char type[4], const std::string& data) {
  put_u32(out, static_cast<std::uint32_t>(data.size()));
  const std::string body = std::string(type, 4) + data;
  out += body;
  put_u32(out, static_cast<std::uint32_t>(
                   crc32(0L, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()))));
}

}  // namespace

std::string encode_png_gray(std::size_t width, std::size_t height,
                            std::span<const std::uint8_t> pixels) {
  if (width == 0 || height == 0 || pixels.size() != width * height) {
    throw InvalidArgument("PNG: " + std::to_string(pixels.size()) + " pixels for a " +
                          std::to_string(width) + "×" + std::to_string(height) + " image");
  }
  // Each row: filter type 0 (none), then its pixels; the whole zlib-compressed.
  std::string raw;
  raw.reserve(height * (width + 1));
  for (std::size_t y = 0; y < height; ++y) {
    raw.push_back('\0');
    raw.append(reinterpret_cast<const char*>(pixels.data() + y * width), width);
  }
  uLongf packed_size = compressBound(static_cast<uLong>(raw.size()));
  std::string packed(packed_size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_size,
                reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()),
                Z_BEST_COMPRESSION) != Z_OK) {
    throw Error("PNG: zlib could not compress the image");
  }
  packed.resize(packed_size);
  std::string png("\x89PNG\r\n\x1a\n", 8);
  std::string header;
  put_u32(header, static_cast<std::uint32_t>(width));
  put_u32(header, static_cast<std::uint32_t>(height));
  header += std::string("\x08\x00\x00\x00\x00", 5);  // 8 bits, grayscale, deflate, filter 0, no interlace
  put_chunk(png, "IHDR", header);
  put_chunk(png, "IDAT", packed);
  put_chunk(png, "IEND", "");
  return png;
}

GrayImage tile_images(std::span<const float> images, std::size_t count, std::size_t rows,
                      std::size_t cols, std::size_t columns, std::size_t padding) {
  if (count == 0 || columns == 0 || images.size() != count * rows * cols) {
    throw InvalidArgument("image grid: " + std::to_string(images.size()) + " values are not " +
                          std::to_string(count) + " images of " + std::to_string(rows) + "×" +
                          std::to_string(cols));
  }
  const std::size_t grid_rows = (count + columns - 1) / columns;
  GrayImage grid;
  grid.width = columns * (cols + padding) + padding;
  grid.height = grid_rows * (rows + padding) + padding;
  grid.pixels.assign(grid.width * grid.height, 0);
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t top = padding + (k / columns) * (rows + padding);
    const std::size_t left = padding + (k % columns) * (cols + padding);
    for (std::size_t y = 0; y < rows; ++y) {
      for (std::size_t x = 0; x < cols; ++x) {
        const float v = std::clamp(images[(k * rows + y) * cols + x], 0.0f, 1.0f);
        grid.pixels[(top + y) * grid.width + left + x] =
            static_cast<std::uint8_t>(std::lround(v * 255.0f));
      }
    }
  }
  return grid;
}

}  // namespace qccl::tools
