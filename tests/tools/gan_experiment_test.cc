// `qccl experiment qgenx-gan` on the in-process transport with tiny
// settings: the files it writes (a table, a JSON summary, a PNG grid per
// codec, the cached Fréchet classifier), a PNG that decodes to the pixels
// it was given, and runs reproducible from their seed.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../support/world.h"
#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "qccl/experiments/gan/gan_experiment.h"
#include "qccl/reports/png_image.h"

namespace qccl::tools {
namespace {

namespace fs = std::filesystem;

std::uint32_t u32_at(const std::string& bytes, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

// Walks the chunks, checking each CRC; returns IHDR's width and height and
// the inflated IDAT.
struct DecodedPng {
  std::uint32_t width = 0, height = 0;
  std::string raw;
};
DecodedPng decode_png(const std::string& png) {
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  DecodedPng out;
  std::string idat;
  for (std::size_t at = 8; at + 12 <= png.size();) {
    const std::uint32_t length = u32_at(png, at);
    const std::string type = png.substr(at + 4, 4);
    const std::string body = png.substr(at + 4, 4 + length);
    EXPECT_EQ(u32_at(png, at + 8 + length),
              crc32(0L, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size())))
        << type;
    if (type == "IHDR") {
      out.width = u32_at(png, at + 8);
      out.height = u32_at(png, at + 12);
    }
    if (type == "IDAT") idat += png.substr(at + 8, length);
    at += 12 + length;
  }
  uLongf size = (out.width + 1) * out.height;
  out.raw.assign(size, '\0');
  EXPECT_EQ(uncompress(reinterpret_cast<Bytef*>(out.raw.data()), &size,
                       reinterpret_cast<const Bytef*>(idat.data()), static_cast<uLong>(idat.size())),
            Z_OK);
  return out;
}

TEST(PngImage, DecodesToTheTiledPixels) {
  const std::vector<float> images{0.0f, 1.0f, 0.5f, 2.0f, -1.0f, 0.25f, 0.75f, 1.0f};
  const auto grid = tile_images(images, 2, 2, 2, 2, 1);  // two 2×2 images side by side
  ASSERT_EQ(grid.width, 7u);
  ASSERT_EQ(grid.height, 4u);
  EXPECT_EQ(grid.pixels[1 * 7 + 1], 0);    // image 0 (0, 0)
  EXPECT_EQ(grid.pixels[1 * 7 + 2], 255);  // image 0 (0, 1)
  EXPECT_EQ(grid.pixels[2 * 7 + 1], 128);  // image 0 (1, 0): 0.5
  EXPECT_EQ(grid.pixels[2 * 7 + 2], 255);  // clipped from 2
  EXPECT_EQ(grid.pixels[1 * 7 + 4], 0);    // image 1, clipped from −1
  EXPECT_EQ(grid.pixels[2 * 7 + 5], 255);
  EXPECT_EQ(grid.pixels[0], 0);            // padding
  const auto png = decode_png(encode_png_gray(grid.width, grid.height, grid.pixels));
  ASSERT_EQ(png.width, 7u);
  ASSERT_EQ(png.height, 4u);
  for (std::size_t y = 0; y < 4; ++y) {
    EXPECT_EQ(png.raw[y * 8], '\0');  // filter: none
    EXPECT_EQ(png.raw.substr(y * 8 + 1, 7),
              std::string(reinterpret_cast<const char*>(grid.pixels.data() + y * 7), 7));
  }
  EXPECT_THROW(encode_png_gray(3, 3, grid.pixels), InvalidArgument);
}

GanExperimentConfig tiny(const std::string& output, const std::string& cache) {
  GanExperimentConfig c;
  c.codecs = {"fp32", "qgenx:bits=4,levels=uniform,norm=inf,bucket=1024,coding=fixed"};
  c.output = output;
  c.gan.steps = 2;
  c.gan.batch = 4;
  c.gan.latent = 8;
  c.gan.width = 4;
  c.gan.fd_samples = 200;
  c.gan.grid_samples = 4;
  c.gan.classifier_epochs = 1;
  c.gan.classifier_max_steps = 5;
  c.gan.cache_dir = cache;
  return c;
}

nlohmann::json run(const GanExperimentConfig& config) {
  test::run_world(2, [&](Communicator& comm) { run_gan_experiment(comm, config); });
  return nlohmann::json::parse(read_whole_file(config.output + "/qgenx-gan.json"));
}

TEST(GanExperimentTest, WritesItsFilesAndIsReproducibleFromItsSeed) {
  const fs::path root = fs::temp_directory_path() / ("qccl-gan-experiment-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const std::string cache = (root / "cache").string();
  const auto first = run(tiny((root / "a").string(), cache));

  const std::string classifier = cache + "/frechet-classifier-cnn-e1x5-b64-lr0.05-s1.bin";
  ASSERT_TRUE(fs::exists(classifier));
  const std::string classifier_bytes = read_whole_file(classifier);
  std::ifstream csv(root / "a" / "qgenx-gan.csv");
  std::vector<std::string> lines;
  for (std::string line; std::getline(csv, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].rfind("codec,step_algorithm,ranks,batch_per_rank,steps,frechet_distance,", 0), 0u);
  ASSERT_EQ(first["runs"].size(), 2u);
  for (const auto& r : first["runs"]) {
    EXPECT_GT(r["frechet_distance"].get<double>(), 0);
    // Real training images score far closer to the test set than a
    // generator after 2 steps.
    EXPECT_GT(r["reference_frechet_distance"].get<double>(), 0);
    EXPECT_LT(r["reference_frechet_distance"].get<double>(), r["frechet_distance"].get<double>() / 4);
    EXPECT_GT(r["classifier_accuracy"].get<double>(), 0.1);  // better than chance after 5 steps
    EXPECT_GT(r["sent_bytes_per_step"].get<double>(), 0);
    const auto png = decode_png(read_whole_file((root / "a" / r["samples_png"].get<std::string>()).string()));
    EXPECT_EQ(png.width, 4u * 30 + 2);
    EXPECT_EQ(png.height, 32u);
  }
  EXPECT_EQ(first["runs"][0]["samples_png"], "qgenx-gan-fp32.png");
  EXPECT_EQ(first["runs"][1]["samples_png"],
            "qgenx-gan-qgenx-bits-4-levels-uniform-norm-inf-bucket-1024-coding-fixed-refit-100.png");
  // The 4-bit run sends less than fp32.
  EXPECT_LT(first["runs"][1]["sent_bytes_per_step"].get<double>(),
            first["runs"][0]["sent_bytes_per_step"].get<double>() / 4);

  // The same seed again, the classifier from the cache: the same networks
  // and distances, bit for bit; the cache untouched.
  const auto second = run(tiny((root / "b").string(), cache));
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(second["runs"][i]["parameters_checksum"], first["runs"][i]["parameters_checksum"]);
    EXPECT_EQ(second["runs"][i]["frechet_distance"], first["runs"][i]["frechet_distance"]);
  }
  EXPECT_EQ(read_whole_file(classifier), classifier_bytes);

  // Another seed trains other networks.
  auto other = tiny((root / "c").string(), cache);
  other.codecs = {"fp32"};
  other.gan.seed = 2;
  other.gan.fd_samples = 0;
  const auto third = run(other);
  EXPECT_NE(third["runs"][0]["parameters_checksum"], first["runs"][0]["parameters_checksum"]);
  fs::remove_all(root);
}

TEST(GanExperimentTest, RefusesABadCodecBeforeTraining) {
  GanExperimentConfig config;
  config.codecs = {"fp32", "qsgd:bits=3"};
  const auto message = test::expect_throw_on_every_rank<InvalidArgument>(
      2, [&](Communicator& comm) { run_gan_experiment(comm, config); });
  EXPECT_NE(message.find("bits"), std::string::npos) << message;
}

}  // namespace
}  // namespace qccl::tools
