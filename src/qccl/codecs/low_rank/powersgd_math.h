// The small dense linear algebra of PowerSGD (Vogels, Karimireddy and Jaggi
// 2019, Algorithm 1): products of a gradient matrix M (rows × cols,
// row-major, as a tensor lies in memory) with thin factors of r columns, and
// the orthonormalisation of those columns.
//
// The factors P (rows × r) and Q (cols × r) are stored by column: column k
// is `rows` (resp. `cols`) contiguous floats, so every inner loop below runs
// over contiguous memory, and orthonormalising a column touches one run.
// Every sum is accumulated in double in a fixed order (fixed lanes, no
// fused multiply-add), so the same inputs give the same bits on every rank
// and every instruction set.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace qccl::powersgd {

// p = m · q: p's column k, element i, is the dot product of row i of m with
// q's column k. m has rows·cols elements; q has r columns of cols; p gets r
// columns of rows.
void multiply(std::span<const float> m, std::size_t rows, std::size_t cols,
              std::span<const float> q, std::size_t r, std::span<float> p);

// q = mᵀ · p: q's column k is Σ_i p[k][i] · (row i of m), accumulated in
// double in row order (`workspace` holds r·cols doubles).
void multiply_transposed(std::span<const float> m, std::size_t rows, std::size_t cols,
                         std::span<const float> p, std::size_t r, std::span<float> q,
                         std::vector<double>& workspace);

// Row i of p · qᵀ (cols elements): Σ_k p[k][i] · (q's column k), in k order,
// in double (`workspace` holds cols doubles), rounded once to float.
void product_row(std::span<const float> p, std::size_t rows, std::size_t i,
                 std::span<const float> q, std::size_t cols, std::size_t r, std::span<float> row,
                 std::vector<double>& workspace);

// Orthonormalises the `count` columns of `length` floats stored one after
// another (Gram–Schmidt: each column loses its projections on the columns
// before it, then is scaled to unit length). Runs in double and projects
// twice ("twice is enough": Giraud, Langou and Rozložník 2005), so the
// columns are orthonormal to fp32 precision even when nearly dependent (a
// column dependent on the others up to rounding becomes some unit vector
// orthogonal to them: any such completes the basis). A column that is zero
// after the projections (a zero column, for one) is left zero. Returns how
// many are.
std::size_t orthonormalise(std::span<float> columns, std::size_t count, std::size_t length,
                           std::vector<double>& workspace);

}  // namespace qccl::powersgd
