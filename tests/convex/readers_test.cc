// The data readers: LibSVM and CSV parsing with errors that name the line,
// Fashion-MNIST's gzipped IDX files (a small file written here, and the real
// files when installed), and label binarization and normalization.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "qccl/common/errors.h"
#include "qccl/experiments/intsgd/readers.h"
#include "qccl/experiments/intsgd/synthetic.h"

namespace qccl::convex {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

const std::string kSklearnData = "/usr/lib/python3/dist-packages/sklearn/datasets";

Dataset parse_libsvm_text(const std::string& text) {
  std::istringstream in(text);
  return parse_libsvm(in, "test.svm");
}

TEST(LibsvmReaderTest, ParsesRowsCommentsAndIndices) {
  const auto data = parse_libsvm_text(
      "# comment\n+1 1:0.5 3:-2 # trailing\n\n-1 2:1e3\t4:0\n1\n");
  ASSERT_EQ(data.rows(), 3u);
  EXPECT_EQ(data.features(), 4u);  // index 4 seen, though its value is 0
  EXPECT_EQ(data.label(0), 1.0);
  EXPECT_EQ(data.label(1), -1.0);
  EXPECT_EQ(std::vector<std::uint32_t>(data.columns(0).begin(), data.columns(0).end()),
            (std::vector<std::uint32_t>{0, 2}));
  EXPECT_EQ(data.values(0)[1], -2.0);
  EXPECT_EQ(data.values(1).size(), 1u);  // explicit zero not stored
  EXPECT_TRUE(data.columns(2).empty());
}

TEST(LibsvmReaderTest, ReportsMalformedLinesWithTheirNumber) {
  EXPECT_THAT([] { parse_libsvm_text("1 1:2\npython 2:2.5\n"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("test.svm:2: the label 'python'")));
  EXPECT_THAT([] { parse_libsvm_text("1 5:2.5 2:-5.2\n"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("test.svm:1: feature indices must increase")));
  EXPECT_THAT([] { parse_libsvm_text("\n\n1 0:1\n"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("test.svm:3: feature index 0")));
  EXPECT_THAT([] { parse_libsvm_text("1 3:x\n"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("'3:x' is not index:value")));
  EXPECT_THAT([] { parse_libsvm_text("1,2 3:1\n"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("multilabel")));
  EXPECT_THAT([] { parse_libsvm_text("1 qid:3 1:1\n"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("qid")));
  EXPECT_THAT([] { parse_libsvm_text("# only a comment\n"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("no samples")));
}

// scikit-learn's own svmlight test files (Debian's python3-sklearn).
TEST(LibsvmReaderTest, ReadsScikitLearnTestFiles) {
  const std::string dir = kSklearnData + "/tests/data/";
  if (!std::filesystem::exists(dir + "svmlight_classification.txt")) {
    GTEST_SKIP() << "python3-sklearn is not installed (scripts/install-deps installs it)";
  }
  const auto data = read_libsvm(dir + "svmlight_classification.txt");
  EXPECT_EQ(data.rows(), 6u);
  EXPECT_EQ(data.features(), 21u);
  EXPECT_EQ(data.values(3)[0], 1.234567890123456e10);
  EXPECT_THAT([&] { read_libsvm(dir + "svmlight_invalid.txt"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("svmlight_invalid.txt:1: the label 'python'")));
  EXPECT_THAT([&] { read_libsvm(dir + "svmlight_invalid_order.txt"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("svmlight_invalid_order.txt:1: feature indices")));
  EXPECT_THAT([&] { read_libsvm(dir + "svmlight_multilabel.txt"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("svmlight_multilabel.txt:2: multilabel")));
  auto labels = data;
  EXPECT_THAT([&] { labels.binarize_labels("svmlight_classification"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("exactly two distinct labels, found 4")));
  EXPECT_THROW(read_libsvm(dir + "no-such-file.txt"), InvalidArgument);
}

TEST(CsvReaderTest, SkipsAHeaderAndTakesTheLabelColumn) {
  std::istringstream in("3,2,bad,good\n1.5,2,0\n-1,4,1\n\n0,0,1\n");
  auto data = parse_csv(in, "t.csv");
  ASSERT_EQ(data.rows(), 3u);
  EXPECT_EQ(data.features(), 2u);
  EXPECT_EQ(data.values(1)[1], 4.0);
  data.binarize_labels("t.csv");
  EXPECT_EQ(data.label(0), -1.0);
  EXPECT_EQ(data.label(2), 1.0);
  std::istringstream first("7,1,2\n8,3,4\n");
  const auto by_first = parse_csv(first, "f.csv", 0);
  EXPECT_EQ(by_first.label(1), 8.0);
  EXPECT_EQ(by_first.values(1)[0], 3.0);
}

TEST(CsvReaderTest, ReportsBadRows) {
  std::istringstream ragged("1,2,0\n1,2\n");
  EXPECT_THAT([&] { parse_csv(ragged, "r.csv"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("r.csv:2: has 2 fields, earlier rows 3")));
  std::istringstream text("1,2,0\n1,x,1\n");
  EXPECT_THAT([&] { parse_csv(text, "x.csv"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("x.csv:2: a field is not a number")));
  std::istringstream column("1,2,0\n");
  EXPECT_THAT([&] { parse_csv(column, "c.csv", 5); },
              ThrowsMessage<InvalidArgument>(HasSubstr("label column 5 does not exist")));
}

TEST(CsvReaderTest, ReadsBreastCancer) {
  const std::string path = kSklearnData + "/data/breast_cancer.csv";
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << "python3-sklearn is not installed (scripts/install-deps installs it)";
  }
  auto data = read_csv(path);
  EXPECT_EQ(data.rows(), 569u);
  EXPECT_EQ(data.features(), 30u);
  data.binarize_labels(path);
  int benign = 0;  // label 1, the larger, becomes +1: 357 benign, 212 malignant
  for (std::size_t r = 0; r < data.rows(); ++r) benign += data.label(r) > 0;
  EXPECT_EQ(benign, 357);
  EXPECT_EQ(data.values(0)[0], 17.99);  // the first row's first feature, as written
  normalize(data, Normalization::standardize);
  for (std::size_t r = 0; r < data.rows(); ++r) {
    EXPECT_NEAR(data.row_squared_norm(r), 1.0, 1e-12);
  }
}

// Writes a gzipped IDX file: magic, dimensions, bytes.
void write_idx(const std::string& path, const std::vector<std::uint32_t>& dims,
               const std::vector<unsigned char>& values, std::size_t drop = 0) {
  std::vector<unsigned char> bytes{0, 0, 8, static_cast<unsigned char>(dims.size())};
  for (auto d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<unsigned char>(d >> shift));
  }
  bytes.insert(bytes.end(), values.begin(), values.end());
  bytes.resize(bytes.size() - drop);
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(file);
}

TEST(IdxReaderTest, ReadsTwoClassesAndRejectsTruncatedFiles) {
  const auto dir = std::filesystem::temp_directory_path() / "qccl-idx-test";
  std::filesystem::create_directories(dir);
  // 4 images of 2×2 pixels, labels 0, 6, 3, 6.
  write_idx(dir / "train-images-idx3-ubyte.gz", {4, 2, 2},
            {0, 255, 0, 51, 1, 2, 3, 4, 9, 9, 9, 9, 0, 0, 0, 255});
  write_idx(dir / "train-labels-idx1-ubyte.gz", {4}, {0, 6, 3, 6});
  const auto data = read_fashion_mnist_pair(dir, 0, 6);
  ASSERT_EQ(data.rows(), 3u);
  EXPECT_EQ(data.features(), 4u);
  EXPECT_EQ(data.label(0), -1.0);
  EXPECT_EQ(data.label(1), 1.0);
  EXPECT_EQ(std::vector<double>(data.values(0).begin(), data.values(0).end()),
            (std::vector<double>{1.0, 0.2}));
  write_idx(dir / "train-labels-idx1-ubyte.gz", {4}, {0, 6, 3, 6}, 1);
  EXPECT_THAT([&] { read_fashion_mnist_pair(dir, 0, 6); },
              ThrowsMessage<InvalidArgument>(HasSubstr("truncated")));
  write_idx(dir / "train-labels-idx1-ubyte.gz", {3}, {0, 6, 3});
  EXPECT_THAT([&] { read_fashion_mnist_pair(dir, 0, 6); },
              ThrowsMessage<InvalidArgument>(HasSubstr("has 4 images but")));
  std::ofstream(dir / "train-labels-idx1-ubyte.gz") << "not gzip, not idx";
  EXPECT_THROW(read_fashion_mnist_pair(dir, 0, 6), InvalidArgument);
  EXPECT_THAT([] { read_fashion_mnist_pair("/nonexistent", 0, 6); },
              ThrowsMessage<InvalidArgument>(HasSubstr("dataset-fashion-mnist")));
  EXPECT_THROW(read_fashion_mnist_pair(dir, 0, 0), InvalidArgument);
  std::filesystem::remove_all(dir);
}

TEST(IdxReaderTest, ReadsFashionMnistTshirtsAndShirts) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed (scripts/install-deps installs it)";
  }
  const auto data = read_fashion_mnist_pair(dir, 0, 6);
  EXPECT_EQ(data.rows(), 12000u);  // 6000 of each class
  EXPECT_EQ(data.features(), 784u);
  double positives = 0;
  for (std::size_t r = 0; r < data.rows(); ++r) positives += data.label(r) > 0;
  EXPECT_EQ(positives, 6000);
}

TEST(SyntheticDataTest, DeterministicUnitRowsWithBothLabels) {
  const auto a = make_synthetic(200, 10, 3), b = make_synthetic(200, 10, 3);
  const auto c = make_synthetic(200, 10, 4);
  ASSERT_EQ(a.rows(), 200u);
  int positives = 0;
  for (std::size_t r = 0; r < a.rows(); ++r) {
    EXPECT_NEAR(a.row_squared_norm(r), 1.0, 1e-12);
    EXPECT_EQ(a.values(r)[3], b.values(r)[3]);
    positives += a.label(r) > 0;
  }
  EXPECT_GT(positives, 20);
  EXPECT_LT(positives, 180);
  EXPECT_NE(a.values(0)[0], c.values(0)[0]);
}

}  // namespace
}  // namespace qccl::convex
