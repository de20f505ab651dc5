#include "qccl/engines/row_gradients.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "qccl/collectives/allgather.h"
#include "qccl/common/errors.h"

namespace qccl::engines {

void RowGradients::reset(std::vector<std::size_t> rows, std::vector<std::size_t> row_elements) {
  rows_ = std::move(rows);
  row_elements_ = std::move(row_elements);
  const std::size_t n = rows_.size();
  known_.assign(n, 1);
  nonzero_.assign(n, {});
  own_.assign(n, Form::unused);
  own_rows_.assign(n, {});
  handed_as_rows_.assign(n, 0);
  dense_somewhere_.assign(n, 0);
  step_rows_.assign(n, {});
  exchanged_ = false;
  completed_ = true;
}

void RowGradients::begin_step() {
  if (!completed_) std::fill(known_.begin(), known_.end(), 0);
  completed_ = false;
  std::fill(own_.begin(), own_.end(), Form::unused);
  std::fill(handed_as_rows_.begin(), handed_as_rows_.end(), 0);
  std::fill(dense_somewhere_.begin(), dense_somewhere_.end(), 0);
  exchanged_ = false;
  cleared_ = 0;
}

std::size_t RowGradients::clear_region(std::size_t t, std::span<float> region) {
  std::size_t written = 0;
  if (known_[t]) {
    const std::size_t w = row_elements_[t];
    for (const std::uint32_t row : nonzero_[t]) {
      std::fill_n(region.begin() + static_cast<std::ptrdiff_t>(row * w), w, 0.0f);
      written += w;
    }
  } else {
    std::fill(region.begin(), region.end(), 0.0f);
    written = region.size();
  }
  known_[t] = 1;
  nonzero_[t].clear();
  cleared_ += written;
  return written;
}

void RowGradients::set_dense(std::size_t t) {
  own_[t] = Form::dense;
  known_[t] = 0;  // the gradient fills the region
}

void RowGradients::set_rows(std::size_t t, std::vector<std::uint32_t> rows) {
  own_[t] = Form::rows;
  own_rows_[t] = std::move(rows);
  nonzero_[t] = own_rows_[t];  // the region now holds these rows
}

// A message: every tensor's form (one byte each, padded to 4 bytes), then
// for each tensor given as rows, in tensor order, its row count and rows
// (uint32 each, native byte order: every rank runs the same build).
std::size_t RowGradients::header_bytes() const { return (own_.size() + 3) / 4 * 4; }

std::size_t RowGradients::message_bytes() const {
  std::size_t bytes = header_bytes();
  bool any = false;
  for (std::size_t t = 0; t < own_.size(); ++t) {
    if (own_[t] != Form::rows) continue;
    any = true;
    bytes += 4 * (1 + own_rows_[t].size());
  }
  return any ? bytes : 0;
}

std::vector<std::uint8_t> RowGradients::message() const {
  std::vector<std::uint8_t> out(header_bytes(), 0);
  for (std::size_t t = 0; t < own_.size(); ++t) out[t] = static_cast<std::uint8_t>(own_[t]);
  const auto put = [&out](std::uint32_t word) {
    const std::size_t at = out.size();
    out.resize(at + 4);
    std::memcpy(out.data() + at, &word, 4);
  };
  for (std::size_t t = 0; t < own_.size(); ++t) {
    if (own_[t] != Form::rows) continue;
    put(static_cast<std::uint32_t>(own_rows_[t].size()));
    for (const std::uint32_t row : own_rows_[t]) put(row);
  }
  return out;
}

void RowGradients::exchange(Communicator& comm, int tag, std::span<const std::size_t> sizes,
                            const CollectiveOptions& options) {
  // Nobody has rows: nothing moves, and nothing is learnt of the other
  // ranks' forms (a tensor unused here may be dense elsewhere).
  if (std::all_of(sizes.begin(), sizes.end(), [](std::size_t s) { return s == 0; })) return;
  exchanged_ = true;
  // A rank without rows still tells its forms (a dense gradient of a table
  // another rank sends as rows makes the table dense for everybody).
  std::vector<std::size_t> counts(sizes.begin(), sizes.end());
  std::size_t total = 0;
  for (auto& c : counts) total += c = std::max(c, header_bytes());
  auto mine = message();
  if (mine.size() != counts[static_cast<std::size_t>(comm.rank())]) {
    throw Error("row exchange: this rank's message is " + std::to_string(mine.size()) +
                        " bytes, its check said " +
                        std::to_string(counts[static_cast<std::size_t>(comm.rank())]));
  }
  std::vector<std::byte> all(total);
  allgatherv_bytes_body(comm, tag, std::as_bytes(std::span(mine)), counts, all, options);
  merge(all, counts);
}

void RowGradients::merge(std::span<const std::byte> all, std::span<const std::size_t> sizes) {
  const std::size_t n = own_.size();
  for (std::size_t t = 0; t < n; ++t) step_rows_[t].clear();
  std::vector<char> rows_somewhere(n, 0);
  std::size_t at = 0;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    const std::byte* message = all.data() + at;
    const std::size_t end = sizes[r];
    std::size_t read = header_bytes();
    const auto word = [&]() {
      if (read + 4 > end) {
        throw CommError("row exchange: the message of rank " + std::to_string(r) +
                        " ends inside its rows (corrupt message?)");
      }
      std::uint32_t w;
      std::memcpy(&w, message + read, 4);
      read += 4;
      return w;
    };
    for (std::size_t t = 0; t < n; ++t) {
      const auto form = static_cast<std::uint8_t>(message[t]);
      if (form > static_cast<std::uint8_t>(Form::rows)) {
        throw CommError("row exchange: rank " + std::to_string(r) + " sent form " +
                        std::to_string(form) + " for tensor " + std::to_string(t) +
                        " (corrupt message?)");
      }
      if (form == static_cast<std::uint8_t>(Form::dense)) dense_somewhere_[t] = 1;
      if (form != static_cast<std::uint8_t>(Form::rows)) continue;
      rows_somewhere[t] = 1;
      const std::uint32_t count = word();
      for (std::uint32_t k = 0; k < count; ++k) {
        const std::uint32_t row = word();
        if (row >= rows_[t]) {
          throw CommError("row exchange: rank " + std::to_string(r) + " sent row " +
                          std::to_string(row) + " of a tensor of " + std::to_string(rows_[t]) +
                          " rows (corrupt message?)");
        }
        step_rows_[t].push_back(row);
      }
    }
    if (read != end) {
      throw CommError("row exchange: the message of rank " + std::to_string(r) + " is " +
                      std::to_string(end) + " bytes, its rows " + std::to_string(read) +
                      " (corrupt message?)");
    }
    at += end;
  }
  for (std::size_t t = 0; t < n; ++t) {
    handed_as_rows_[t] = rows_somewhere[t] && !dense_somewhere_[t];
    auto& rows = step_rows_[t];
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  }
}

const std::vector<std::uint32_t>* RowGradients::rows_of_step(std::size_t t) const {
  return exchanged_ && handed_as_rows_[t] ? &step_rows_[t] : nullptr;
}

std::size_t RowGradients::rows_in_step() const {
  std::size_t rows = 0;
  for (std::size_t t = 0; t < own_.size(); ++t) {
    if (const auto* r = rows_of_step(t)) rows += r->size();
  }
  return rows;
}

// The mean is zero wherever every rank's input was: outside the rows of
// the step when no rank was dense, which only an exchange tells.
void RowGradients::means_written(std::size_t t, bool zero_stays_zero) {
  if (!zero_stays_zero || own_[t] == Form::dense || !exchanged_ || dense_somewhere_[t]) {
    known_[t] = 0;
    return;
  }
  known_[t] = 1;
  nonzero_[t] = step_rows_[t];
}

}  // namespace qccl::engines
