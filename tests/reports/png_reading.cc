#include "png_reading.h"

#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace qccl::tools::test {
namespace {

std::uint32_t big_endian(const std::string& bytes, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<std::uint8_t>(bytes[at + i]);
  return v;
}

std::vector<std::uint8_t> inflate_all(const std::string& data, std::size_t expected) {
  std::vector<std::uint8_t> out(expected);
  uLongf length = static_cast<uLongf>(expected);
  if (uncompress(out.data(), &length, reinterpret_cast<const Bytef*>(data.data()),
                 static_cast<uLong>(data.size())) != Z_OK ||
      length != expected) {
    throw std::runtime_error("PNG image data does not inflate to its size");
  }
  return out;
}

int paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

// Undoes each row's filter (PNG §9) in place; returns the rows without
// their filter bytes.
std::vector<std::uint8_t> unfilter(std::vector<std::uint8_t>& raw, std::size_t stride,
                                   std::size_t rows, std::size_t bpp) {
  std::vector<std::uint8_t> out(stride * rows);
  for (std::size_t y = 0; y < rows; ++y) {
    const std::uint8_t filter = raw[y * (stride + 1)];
    std::uint8_t* row = &out[y * stride];
    const std::uint8_t* in = &raw[y * (stride + 1) + 1];
    const std::uint8_t* up = y > 0 ? &out[(y - 1) * stride] : nullptr;
    for (std::size_t i = 0; i < stride; ++i) {
      const int a = i >= bpp ? row[i - bpp] : 0, b = up ? up[i] : 0;
      const int c = up && i >= bpp ? up[i - bpp] : 0;
      const int predicted = filter == 0   ? 0
                            : filter == 1 ? a
                            : filter == 2 ? b
                            : filter == 3 ? (a + b) / 2
                            : filter == 4 ? paeth(a, b, c)
                                          : -1;
      if (predicted < 0) throw std::runtime_error("unknown PNG filter");
      row[i] = static_cast<std::uint8_t>(in[i] + predicted);
    }
  }
  return out;
}

}  // namespace

RgbaImage read_png(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 33 || bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) {
    throw std::runtime_error(path + " is not a PNG file");
  }
  RgbaImage image;
  int channels = 0;
  std::string data;
  for (std::size_t at = 8; at + 8 <= bytes.size();) {
    const std::size_t length = big_endian(bytes, at);
    const std::string type = bytes.substr(at + 4, 4);
    if (type == "IHDR") {
      image.width = big_endian(bytes, at + 8);
      image.height = big_endian(bytes, at + 12);
      const int depth = bytes[at + 16], colour = bytes[at + 17], interlace = bytes[at + 20];
      if (depth != 8 || (colour != 2 && colour != 6) || interlace != 0) {
        throw std::runtime_error(path + ": not an 8-bit RGB(A) PNG without interlace");
      }
      channels = colour == 6 ? 4 : 3;
    } else if (type == "IDAT") {
      data += bytes.substr(at + 8, length);
    }
    at += 12 + length;
  }
  if (channels == 0) throw std::runtime_error(path + " has no IHDR");
  const std::size_t stride = image.width * static_cast<std::size_t>(channels);
  auto raw = inflate_all(data, (stride + 1) * image.height);
  const auto rows = unfilter(raw, stride, image.height, static_cast<std::size_t>(channels));
  image.pixels.resize(4 * image.width * image.height);
  for (std::size_t i = 0; i < image.width * image.height; ++i) {
    for (int c = 0; c < 4; ++c) {
      image.pixels[4 * i + c] = c < channels ? rows[i * channels + c] : 255;
    }
  }
  return image;
}

}  // namespace qccl::tools::test
