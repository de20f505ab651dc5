// A labelled data set for binary classification, stored as compressed sparse
// rows (dense data is the special case with every column present). Readers
// keep labels as read; binarize_labels() maps them to {−1, +1}.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace qccl::convex {

struct SparseEntry {
  std::uint32_t column;
  double value;
};

class Dataset {
 public:
  // Appends a row; columns strictly increasing, each below features().
  void add_row(std::span<const SparseEntry> entries, double label);
  // Widens the feature space (readers learn it as they go).
  void set_features(std::size_t features);

  std::size_t rows() const { return labels_.size(); }
  std::size_t features() const { return features_; }
  std::size_t nonzeros() const { return values_.size(); }
  double label(std::size_t row) const { return labels_[row]; }
  std::span<const std::uint32_t> columns(std::size_t row) const {
    return {columns_.data() + row_start_[row], row_start_[row + 1] - row_start_[row]};
  }
  std::span<const double> values(std::size_t row) const {
    return {values_.data() + row_start_[row], row_start_[row + 1] - row_start_[row]};
  }
  std::span<double> mutable_values(std::size_t row) {
    return {values_.data() + row_start_[row], row_start_[row + 1] - row_start_[row]};
  }
  // a_row · x
  double dot(std::size_t row, std::span<const double> x) const;
  // out += scale · a_row
  void add_scaled_row(std::size_t row, double scale, std::span<double> out) const;
  double row_squared_norm(std::size_t row) const;

  // Maps the labels as read to ±1: exactly two distinct values, the larger
  // → +1 (so 0/1, 1/2 and −1/+1 files all work). Throws InvalidArgument
  // naming `source` otherwise.
  void binarize_labels(const std::string& source);

 private:
  std::size_t features_ = 0;
  std::vector<std::size_t> row_start_{0};
  std::vector<std::uint32_t> columns_;
  std::vector<double> values_;
  std::vector<double> labels_;
};

enum class Normalization {
  none,
  unit_rows,    // every sample scaled to ‖a‖ = 1 (as LibSVM ships rcv1 and real-sim)
  standardize,  // every column to mean 0, variance 1 (dense data), then unit rows
};

Normalization parse_normalization(const std::string& text);
std::string to_string(Normalization normalization);
void normalize(Dataset& data, Normalization normalization);

}  // namespace qccl::convex
