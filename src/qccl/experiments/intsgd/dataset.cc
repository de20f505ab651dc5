#include "qccl/experiments/intsgd/dataset.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "qccl/common/errors.h"

namespace qccl::convex {

void Dataset::add_row(std::span<const SparseEntry> entries, double label) {
  for (std::size_t k = 0; k < entries.size(); ++k) {
    if (k > 0 && entries[k].column <= entries[k - 1].column) {
      throw InvalidArgument("dataset row " + std::to_string(rows()) +
                            ": feature indices must increase");
    }
    features_ = std::max<std::size_t>(features_, entries[k].column + std::size_t{1});
    columns_.push_back(entries[k].column);
    values_.push_back(entries[k].value);
  }
  row_start_.push_back(values_.size());
  labels_.push_back(label);
}

void Dataset::set_features(std::size_t features) { features_ = std::max(features_, features); }

double Dataset::dot(std::size_t row, std::span<const double> x) const {
  double sum = 0;
  for (std::size_t k = row_start_[row]; k < row_start_[row + 1]; ++k) {
    sum += values_[k] * x[columns_[k]];
  }
  return sum;
}

void Dataset::add_scaled_row(std::size_t row, double scale, std::span<double> out) const {
  for (std::size_t k = row_start_[row]; k < row_start_[row + 1]; ++k) {
    out[columns_[k]] += scale * values_[k];
  }
}

double Dataset::row_squared_norm(std::size_t row) const {
  double sum = 0;
  for (double v : values(row)) sum += v * v;
  return sum;
}

void Dataset::binarize_labels(const std::string& source) {
  const std::set<double> distinct(labels_.begin(), labels_.end());
  if (distinct.size() != 2) {
    throw InvalidArgument(source + ": binary classification needs exactly two distinct labels, "
                          "found " + std::to_string(distinct.size()));
  }
  const double positive = *distinct.rbegin();
  for (double& label : labels_) label = label == positive ? 1.0 : -1.0;
}

Normalization parse_normalization(const std::string& text) {
  if (text == "none") return Normalization::none;
  if (text == "unit-rows") return Normalization::unit_rows;
  if (text == "standardize") return Normalization::standardize;
  throw InvalidArgument("unknown normalization '" + text + "'; valid: none, unit-rows, standardize");
}

std::string to_string(Normalization normalization) {
  switch (normalization) {
    case Normalization::none: return "none";
    case Normalization::unit_rows: return "unit-rows";
    case Normalization::standardize: return "standardize";
  }
  return "?";
}

void normalize(Dataset& data, Normalization normalization) {
  if (normalization == Normalization::none) return;
  if (normalization == Normalization::standardize) {
    const std::size_t d = data.features();
    if (data.nonzeros() != data.rows() * d) {
      throw InvalidArgument("standardize needs dense data (every feature of every row); use "
                            "unit-rows or none for sparse data");
    }
    std::vector<double> mean(d, 0.0), square(d, 0.0);
    const double count = static_cast<double>(data.rows());
    for (std::size_t r = 0; r < data.rows(); ++r) {
      const auto v = data.values(r);
      for (std::size_t j = 0; j < d; ++j) mean[j] += v[j] / count;
    }
    for (std::size_t r = 0; r < data.rows(); ++r) {
      const auto v = data.values(r);
      for (std::size_t j = 0; j < d; ++j) square[j] += (v[j] - mean[j]) * (v[j] - mean[j]) / count;
    }
    for (std::size_t r = 0; r < data.rows(); ++r) {
      auto v = data.mutable_values(r);
      for (std::size_t j = 0; j < d; ++j) {
        const double sd = std::sqrt(square[j]);
        v[j] = sd > 0 ? (v[j] - mean[j]) / sd : 0.0;  // a constant column carries nothing
      }
    }
  }
  for (std::size_t r = 0; r < data.rows(); ++r) {
    const double norm = std::sqrt(data.row_squared_norm(r));
    if (norm == 0) continue;
    for (double& v : data.mutable_values(r)) v /= norm;
  }
}

}  // namespace qccl::convex
