#include "qccl/codecs/low_rank/powersgd_math.h"

#include <cmath>

// Compiled for AVX-512, AVX2 and baseline x86-64, chosen at run time. The
// fixed lanes below make the results the same on each.
#define QCCL_POWERSGD_MULTIVERSION \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

namespace qccl::powersgd {
namespace {

constexpr std::size_t kLanes = 8;

// Σ a[j]·b[j] in double: kLanes running sums (lane l takes j ≡ l mod kLanes),
// then the lanes and the tail in a fixed order. One for fp32 data, one for
// the fp64 columns of the orthonormalisation.
QCCL_POWERSGD_MULTIVERSION
double dot(const float* __restrict a, const float* __restrict b, std::size_t n) {
  double lane[kLanes] = {};
  std::size_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (std::size_t l = 0; l < kLanes; ++l) {
      lane[l] += static_cast<double>(a[j + l]) * static_cast<double>(b[j + l]);
    }
  }
  double sum = 0;
  for (double s : lane) sum += s;
  for (; j < n; ++j) sum += static_cast<double>(a[j]) * static_cast<double>(b[j]);
  return sum;
}

QCCL_POWERSGD_MULTIVERSION
double dot(const double* __restrict a, const double* __restrict b, std::size_t n) {
  double lane[kLanes] = {};
  std::size_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (std::size_t l = 0; l < kLanes; ++l) lane[l] += a[j + l] * b[j + l];
  }
  double sum = 0;
  for (double s : lane) sum += s;
  for (; j < n; ++j) sum += a[j] * b[j];
  return sum;
}

// acc[j] += scale · x[j], in double.
QCCL_POWERSGD_MULTIVERSION
void add_scaled(double* __restrict acc, double scale, const float* __restrict x, std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) acc[j] += scale * static_cast<double>(x[j]);
}

QCCL_POWERSGD_MULTIVERSION
void add_scaled(double* __restrict acc, double scale, const double* __restrict x, std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) acc[j] += scale * x[j];
}

}  // namespace

void multiply(std::span<const float> m, std::size_t rows, std::size_t cols,
              std::span<const float> q, std::size_t r, std::span<float> p) {
  for (std::size_t i = 0; i < rows; ++i) {
    const float* row = m.data() + i * cols;
    for (std::size_t k = 0; k < r; ++k) {
      p[k * rows + i] = static_cast<float>(dot(row, q.data() + k * cols, cols));
    }
  }
}

void multiply_transposed(std::span<const float> m, std::size_t rows, std::size_t cols,
                         std::span<const float> p, std::size_t r, std::span<float> q,
                         std::vector<double>& workspace) {
  workspace.assign(r * cols, 0.0);
  for (std::size_t i = 0; i < rows; ++i) {
    const float* row = m.data() + i * cols;
    for (std::size_t k = 0; k < r; ++k) {
      add_scaled(workspace.data() + k * cols, static_cast<double>(p[k * rows + i]), row, cols);
    }
  }
  for (std::size_t e = 0; e < r * cols; ++e) q[e] = static_cast<float>(workspace[e]);
}

void product_row(std::span<const float> p, std::size_t rows, std::size_t i,
                 std::span<const float> q, std::size_t cols, std::size_t r, std::span<float> row,
                 std::vector<double>& workspace) {
  workspace.assign(cols, 0.0);
  for (std::size_t k = 0; k < r; ++k) {
    add_scaled(workspace.data(), static_cast<double>(p[k * rows + i]), q.data() + k * cols, cols);
  }
  for (std::size_t j = 0; j < cols; ++j) row[j] = static_cast<float>(workspace[j]);
}

std::size_t orthonormalise(std::span<float> columns, std::size_t count, std::size_t length,
                           std::vector<double>& workspace) {
  workspace.assign(columns.begin(), columns.begin() + static_cast<long>(count * length));
  std::size_t zero = 0;
  for (std::size_t k = 0; k < count; ++k) {
    double* column = workspace.data() + k * length;
    for (int pass = 0; pass < 2; ++pass) {
      for (std::size_t l = 0; l < k; ++l) {
        const double* before = workspace.data() + l * length;
        const double projection = dot(before, column, length);
        add_scaled(column, -projection, before, length);
      }
    }
    const double norm = std::sqrt(dot(column, column, length));
    if (norm == 0.0) {
      ++zero;
      continue;
    }
    const double inverse = 1.0 / norm;
    for (std::size_t j = 0; j < length; ++j) column[j] *= inverse;
  }
  for (std::size_t e = 0; e < count * length; ++e) columns[e] = static_cast<float>(workspace[e]);
  return zero;
}

}  // namespace qccl::powersgd
