// Optimizer updates of an embedding table from the rows of its gradient:
// only the rows a step touched change, so a step costs in proportion to
// them rather than to the table.
//
// - Lazy Adam: Adam's update (adam_kernel.h, the same arithmetic and bits)
//   on each given row; the other rows, and their moments, stay as they are
//   — their moments do not decay in steps that do not touch them. These are
//   the semantics of PyTorch's SparseAdam, which embedding-heavy models
//   (click-through prediction, DLRM) train their tables with. The step
//   count, and so the bias correction, is the table's, one per step.
// - Row-wise Adagrad: one accumulator per row, which grows by the mean of
//   the row's squared gradient; the row moves by lr/(√G + ε) times its
//   gradient. It is the Adagrad variant DLRM-style training uses for its
//   tables (one float of state per row instead of one per element). A row
//   with a zero gradient does not change, so this update on the rows of a
//   sparse gradient equals it on the dense gradient, bit for bit.
//
// No libtorch here: the optimizers call these on their tensors' storage.
#pragma once

#include <cstddef>
#include <cstdint>

#include "qccl/engines/adam_kernel.h"
#include "qccl/engines/row_update.h"

namespace qccl::engines {

// The rows of a gradient: `count` row indices (distinct, each below the
// table's rows; null: rows 0..count−1, a dense gradient) and their values,
// `width` floats per row, row k at values + k·width.
struct GradientRows {
  const std::int64_t* rows = nullptr;
  std::size_t count = 0;
  std::size_t width = 0;
  const float* values = nullptr;
};

// Lazy Adam on the table whose arrays `table` gives (its `grad` and
// `count` are ignored): each given row through adam_update_arrays.
void lazy_adam_rows(const AdamArrays& table, const GradientRows& gradient,
                    const AdamCoefficients& c, AdamRounding rounding);

// Row-wise Adagrad on the table `param` with one accumulator per row:
//   G_r ← G_r + (Σ_j g_j²)/width   (summed in j order, in float),
//   p_rj ← p_rj − (lr / (√G_r + ε))·g_j   for each given row r.
void rowwise_adagrad_rows(float* param, float* accumulator, const GradientRows& gradient,
                          float lr, float eps);

}  // namespace qccl::engines
