// The training engine's data layer: readers, generator and epoch order.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <set>

#include "qccl/common/errors.h"
#include "qccl/data/click_data.h"
#include "qccl/data/epoch_order.h"
#include "qccl/data/image_set.h"
#include "qccl/data/text_corpus.h"

namespace qccl::data {
namespace {

namespace fs = std::filesystem;

fs::path scratch_dir(const std::string& name) {
  const auto dir = fs::temp_directory_path() / ("qccl-data-test-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write_gzip(const fs::path& path, const std::vector<unsigned char>& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  gzclose(file);
}

std::vector<unsigned char> idx_header(std::vector<std::uint32_t> dims) {
  std::vector<unsigned char> bytes{0, 0, 8, static_cast<unsigned char>(dims.size())};
  for (auto d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<unsigned char>(d >> shift));
  }
  return bytes;
}

// A tiny Fashion-MNIST-shaped directory: `n` 28×28 images, labels i % 10.
void write_fake_fashion(const fs::path& dir, std::uint32_t n, bool truncate_images = false) {
  for (const char* split : {"train", "t10k"}) {
    auto images = idx_header({n, 28, 28});
    for (std::uint32_t i = 0; i < n * 784; ++i) images.push_back(static_cast<unsigned char>(i % 251));
    if (truncate_images) images.resize(images.size() - 100);
    auto labels = idx_header({n});
    for (std::uint32_t i = 0; i < n; ++i) labels.push_back(static_cast<unsigned char>(i % 10));
    write_gzip(dir / (std::string(split) + "-images-idx3-ubyte.gz"), images);
    write_gzip(dir / (std::string(split) + "-labels-idx1-ubyte.gz"), labels);
  }
}

TEST(FashionMnist, DebianCopyHasAllClassesInBothSplits) {
  const auto train = read_fashion_mnist(kFashionMnistDirectory, Split::train);
  const auto test = read_fashion_mnist(kFashionMnistDirectory, Split::test);
  ASSERT_EQ(train.size(), 60000u);
  ASSERT_EQ(test.size(), 10000u);
  EXPECT_EQ(train.rows, 28u);
  EXPECT_EQ(train.pixels.size(), 60000u * 784u);
  std::vector<int> counts(10, 0);
  for (auto label : train.labels) ++counts[label];
  for (int c = 0; c < 10; ++c) EXPECT_EQ(counts[static_cast<std::size_t>(c)], 6000) << "class " << c;
}

TEST(FashionMnist, ReadsAWrittenDirectoryExactly) {
  const auto dir = scratch_dir("fake");
  write_fake_fashion(dir, 20);
  const auto set = read_fashion_mnist(dir.string(), Split::test);
  ASSERT_EQ(set.size(), 20u);
  EXPECT_EQ(set.labels[13], 3);
  EXPECT_EQ(set.pixels[784 * 2 + 5], static_cast<unsigned char>((784 * 2 + 5) % 251));
}

TEST(FashionMnist, MissingTruncatedAndBadLabelFilesAreNamed) {
  const auto empty = scratch_dir("missing");
  try {
    read_fashion_mnist(empty.string(), Split::train);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("train-images-idx3-ubyte.gz"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("dataset-fashion-mnist"), std::string::npos);
  }
  const auto truncated = scratch_dir("truncated");
  write_fake_fashion(truncated, 10, true);
  try {
    read_fashion_mnist(truncated.string(), Split::train);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  const auto bad = scratch_dir("bad-label");
  write_fake_fashion(bad, 10);
  auto labels = idx_header({10});
  for (int i = 0; i < 10; ++i) labels.push_back(i == 7 ? 12 : 1);
  write_gzip(bad / "train-labels-idx1-ubyte.gz", labels);
  try {
    read_fashion_mnist(bad.string(), Split::train);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("label 12 of sample 7"), std::string::npos) << e.what();
  }
  std::ofstream(bad / "t10k-images-idx3-ubyte.gz") << "not gzip and not idx";
  EXPECT_THROW(read_fashion_mnist(bad.string(), Split::test), InvalidArgument);
}

std::string error_of(const std::function<void()>& read) {
  try {
    read();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "no error";
}

// Inputs that would hang a reader (a FIFO with no writer) or never end
// (/dev/zero behind a link) are refused by their type before a byte is
// read; the other failures say the system's reason, and only a missing
// file gets the hint about installing the dataset.
TEST(FashionMnist, FifosDevicesAndDirectoriesAreRefusedAtOnce) {
  const auto dir = scratch_dir("special");
  write_fake_fashion(dir, 10);
  const auto images = dir / "train-images-idx3-ubyte.gz";
  fs::remove(images);
  ASSERT_EQ(::mkfifo(images.c_str(), 0600), 0);
  EXPECT_NE(error_of([&] { read_fashion_mnist(dir.string(), Split::train); })
                .find("is a FIFO (named pipe), not a regular file"),
            std::string::npos);
  fs::remove(images);
  fs::create_symlink("/dev/zero", images);
  EXPECT_NE(error_of([&] { read_fashion_mnist(dir.string(), Split::train); })
                .find("is a character device, not a regular file"),
            std::string::npos);
  fs::remove(images);
  fs::create_directory(images);
  const auto directory = error_of([&] { read_fashion_mnist(dir.string(), Split::train); });
  EXPECT_NE(directory.find("is a directory, not a regular file"), std::string::npos) << directory;
  EXPECT_EQ(directory.find("dataset-fashion-mnist"), std::string::npos) << directory;
  fs::remove(images);
  fs::create_symlink(dir / "no-such-file", images);  // a dangling link: missing
  EXPECT_NE(error_of([&] { read_fashion_mnist(dir.string(), Split::train); })
                .find("No such file or directory (install Debian's dataset-fashion-mnist"),
            std::string::npos);
}

// A header that declares more values than the file can hold is refused
// before anything is allocated for them; trailing data is refused too.
TEST(FashionMnist, DeclaredSizesAreBoundedByTheFileAndReadExactly) {
  const auto dir = scratch_dir("declared");
  write_fake_fashion(dir, 10);
  write_gzip(dir / "train-labels-idx1-ubyte.gz", idx_header({4000000000u}));
  EXPECT_NE(error_of([&] { read_fashion_mnist(dir.string(), Split::train); })
                .find("declares 4000000000 values, more than a file of its size can hold"),
            std::string::npos);
  auto images = idx_header({10, 28, 28});
  images.resize(images.size() + 10 * 784 + 3, 7);
  write_gzip(dir / "t10k-images-idx3-ubyte.gz", images);
  EXPECT_NE(error_of([&] { read_fashion_mnist(dir.string(), Split::test); })
                .find("has trailing data after its 7840 values"),
            std::string::npos);
}

TEST(Fortunes, SplitsDocumentsAndMapsEveryByte) {
  const auto dir = scratch_dir("fortunes");
  std::string text;
  for (int i = 0; i < 40; ++i) text += "fortune number " + std::to_string(i) + " is a long enough line of text\n%\n";
  std::ofstream(dir / "jokes") << text;
  std::ofstream(dir / "jokes.dat") << "index";
  std::ofstream(dir / "ignored-no-index") << "zzzz\n%\n";
  const auto corpus = read_fortunes(dir.string(), 10);
  EXPECT_EQ(corpus.documents, 40u);
  EXPECT_TRUE(std::is_sorted(corpus.alphabet.begin(), corpus.alphabet.end()));
  EXPECT_EQ(std::count(corpus.alphabet.begin(), corpus.alphabet.end(), 'z'), 0)
      << "a file without a .dat index was read";
  // Documents 9, 19, 29, 39 are the test split; '%' lines are dropped.
  std::string test;
  for (auto id : corpus.test) test += static_cast<char>(corpus.alphabet[id]);
  EXPECT_EQ(test.find("fortune number 9 "), 0u);
  EXPECT_NE(test.find("fortune number 39 "), std::string::npos);
  EXPECT_EQ(test.find('%'), std::string::npos);
  EXPECT_EQ(corpus.train.size() + corpus.test.size() + 40 * 2, text.size());
}

TEST(Fortunes, DebianPackageIsReadable) {
  const auto corpus = read_fortunes(kFortunesDirectory);
  EXPECT_GT(corpus.documents, 1000u);
  EXPECT_GT(corpus.train.size(), 1000000u);
  EXPECT_GT(corpus.test.size(), 10000u);
  EXPECT_LE(corpus.vocabulary(), 256u);
}

TEST(Fortunes, MissingDirectoryExplainsWhatToInstall) {
  try {
    read_fortunes("/nonexistent/fortunes");
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("fortunes package"), std::string::npos);
  }
  EXPECT_THROW(read_fortunes(scratch_dir("no-fortunes").string()), InvalidArgument);
}

TEST(ClickData, DeterministicSkewedAndLabelledByItsModel) {
  ClickDataShape shape;
  shape.values_per_field = 1000;
  const ClickData a(shape, 7), b(shape, 7), other(shape, 8);
  std::vector<std::int64_t> fa(shape.fields), fb(shape.fields), fo(shape.fields);
  std::size_t differ = 0, small = 0, clicks = 0;
  const std::size_t n = 20000;
  double expected_clicks = 0;
  for (std::size_t i = 0; i < n; ++i) {
    a.features(i, false, fa);
    b.features(i, false, fb);
    other.features(i, false, fo);
    ASSERT_EQ(fa, fb);
    differ += fa != fo;
    for (auto v : fa) {
      ASSERT_GE(v, 0);
      ASSERT_LT(v, 1000);
      small += v < 125;  // u^3 < 1/8 iff u < 1/2: half of all values
    }
    clicks += a.label(i, false) > 0.5f;
    expected_clicks += a.click_probability(fa);
  }
  EXPECT_GT(differ, n * 99 / 100);
  const double values = static_cast<double>(n * shape.fields);
  // P(value < V/8) = 1/2; binomial sd = sqrt(values/4).
  EXPECT_NEAR(static_cast<double>(small), values / 2, 5 * std::sqrt(values / 4));
  // Labels follow the generator's probabilities: the count of clicks is
  // within 5 sd of its expectation (sd <= sqrt(n/4)).
  EXPECT_NEAR(static_cast<double>(clicks), expected_clicks, 5 * std::sqrt(n / 4.0));
  EXPECT_THROW(a.features(shape.train_samples, false, fa), InvalidArgument);
}

TEST(EpochOrder, PermutationDeterministicPerSeedAndEpoch) {
  const auto p = epoch_permutation(1000, 3, 0);
  std::vector<std::uint32_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::uint32_t> identity(1000);
  std::iota(identity.begin(), identity.end(), 0U);
  EXPECT_EQ(sorted, identity);
  EXPECT_EQ(p, epoch_permutation(1000, 3, 0));
  EXPECT_NE(p, epoch_permutation(1000, 3, 1));
  EXPECT_NE(p, epoch_permutation(1000, 4, 0));
  EXPECT_NE(p, identity);
}

TEST(EpochOrder, EveryPositionIsUniform) {
  // Element 0 lands in each of 10 positions with probability 1/10 over
  // 20000 epochs: counts within 5 binomial sd (sd = sqrt(20000·0.1·0.9)).
  std::vector<int> where(10, 0);
  for (std::uint64_t epoch = 0; epoch < 20000; ++epoch) {
    const auto p = epoch_permutation(10, 1, epoch);
    ++where[static_cast<std::size_t>(std::find(p.begin(), p.end(), 0U) - p.begin())];
  }
  for (int count : where) EXPECT_NEAR(count, 2000, 5 * std::sqrt(1800.0));
}

}  // namespace
}  // namespace qccl::data
