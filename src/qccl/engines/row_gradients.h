// The rows of a data-parallel step's sparse gradients (embedding tables
// whose backward gives the rows a batch touched), for the engine.
//
// Two things make a table's step cost follow its touched rows rather than
// its size:
// - Clearing. The engine places a sparse gradient's rows into the table's
//   region of its bucket, which must be zero elsewhere. After a step whose
//   codec keeps zeros (CodecTraits::zero_stays_zero) the region is non-zero
//   only on the rows some rank touched, and those are known, so the next
//   step clears them alone instead of the whole table.
// - The rows of the mean. Every rank must update the same rows, so the
//   ranks tell each other which rows they touched (the union is what
//   PyTorch's sparse allreduce gives: every rank's indices). A tensor is
//   handed on as rows when no rank's gradient of it was dense.
//
// The exchange costs no extra round for models without sparse gradients:
// each rank's message size rides on the step's finite-gradients check, and
// the rows move only when some rank has any.
//
// No libtorch here: the engine keeps the tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl::engines {

class RowGradients {
 public:
  // A tensor's gradient in this step, as this rank (or, after exchange(),
  // every rank) saw it.
  enum class Form : std::uint8_t { unused = 0, dense = 1, rows = 2 };

  // Tensors of rows[t] rows of row_elements[t] elements, whose bucket
  // regions are all zero (fresh buckets).
  void reset(std::vector<std::size_t> rows, std::vector<std::size_t> row_elements);
  // Opens a step: no gradient seen yet. After a step that did not complete
  // (a failure between begin and step_completed()), no region is known to
  // be zero anywhere.
  void begin_step();

  // Zeroes tensor t's region (`region`: its elements in the bucket): the
  // rows left non-zero by the last step when they are known, else all of
  // it. Returns the elements written.
  std::size_t clear_region(std::size_t t, std::span<float> region);
  // This rank's gradient of t: dense, or these rows (sorted, distinct).
  void set_dense(std::size_t t);
  void set_rows(std::size_t t, std::vector<std::uint32_t> rows);

  // Bytes of this rank's message, 0 when this rank has no sparse gradient:
  // the value the step's check carries to every rank.
  std::size_t message_bytes() const;
  // Every rank's forms and rows into this step's view, inside a checked
  // call on `tag`: `sizes` are every rank's message_bytes(), gathered by the
  // call's check. One direct round (up to 16 ranks, else the ring) when
  // some size is not 0; otherwise (nobody has rows) nothing moves and the
  // step's forms stay unknown.
  void exchange(Communicator& comm, int tag, std::span<const std::size_t> sizes,
                const CollectiveOptions& options);
  // The step's rows of t over every rank (sorted, distinct) when t is handed
  // on as rows: some rank's gradient came as rows and none dense; null
  // otherwise. Valid after exchange().
  const std::vector<std::uint32_t>* rows_of_step(std::size_t t) const;
  // Rows over every rank and tensor handed on as rows in this step.
  std::size_t rows_in_step() const;

  // The means of t are in its region: with a codec keeping zeros and no
  // rank's gradient of t dense, the region is non-zero only on the step's
  // rows; otherwise anywhere.
  void means_written(std::size_t t, bool zero_stays_zero);
  // The step completed: the regions' states hold for the next one.
  void step_completed() { completed_ = true; }

  // Elements cleared by clear_region() in this step (tests and logs).
  std::size_t elements_cleared() const { return cleared_; }

 private:
  std::vector<std::uint8_t> message() const;
  // Every rank's messages (each its rank's size, or the forms alone) into
  // the step's forms and rows.
  void merge(std::span<const std::byte> all, std::span<const std::size_t> sizes);
  std::size_t header_bytes() const;

  std::vector<std::size_t> rows_, row_elements_;
  // Per tensor: whether its region is zero outside `nonzero_[t]`.
  std::vector<char> known_;
  std::vector<std::vector<std::uint32_t>> nonzero_;
  // This step: this rank's forms and rows; then every rank's.
  std::vector<Form> own_;
  std::vector<std::vector<std::uint32_t>> own_rows_;
  bool exchanged_ = false;
  std::vector<char> handed_as_rows_;   // some rank rows, none dense
  std::vector<char> dense_somewhere_;  // some rank dense
  std::vector<std::vector<std::uint32_t>> step_rows_;
  std::size_t cleared_ = 0;
  bool completed_ = true;
};

}  // namespace qccl::engines
QCCL_API_END
