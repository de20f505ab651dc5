// Readers for the data sets of the convex experiments: LibSVM (svmlight)
// text, CSV with a label column, and Fashion-MNIST's gzipped IDX files. Each
// validates its input and names the file and line (or field) of any problem.
#pragma once

#include <istream>
#include <string>

#include "qccl/experiments/intsgd/dataset.h"

namespace qccl::convex {

// LibSVM: "label index:value index:value ... # comment" per line, indices
// 1-based and strictly increasing; blank and comment lines are skipped.
// Labels are kept as read. Multilabel ("1,2") and "qid:" lines are rejected.
Dataset read_libsvm(const std::string& path);
Dataset parse_libsvm(std::istream& in, const std::string& source);

// CSV of numbers, one sample per line, the label in column `label_column`
// (0-based; −1 for the last). A first line that is not all numbers is taken
// as a header (scikit-learn's data files start with "rows,columns,names").
Dataset read_csv(const std::string& path, int label_column = -1);
Dataset parse_csv(std::istream& in, const std::string& source, int label_column = -1);

// Fashion-MNIST (gzipped IDX: train-images-idx3-ubyte.gz and
// train-labels-idx1-ubyte.gz in `directory`): the samples of the two given
// classes, in file order, pixels scaled to [0, 1], label +1 for class_b.
Dataset read_fashion_mnist_pair(const std::string& directory, int class_a, int class_b);

}  // namespace qccl::convex
