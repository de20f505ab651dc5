#include "qccl/transport/transport.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "qccl/common/errors.h"
#include "qccl/transport/half_sum.h"

namespace qccl {

std::size_t size_of(DataType type) {
  switch (type) {
    case DataType::f32: return 4;
    case DataType::f64: return 8;
    case DataType::i64: return 8;
    case DataType::f16: return 2;
  }
  throw InvalidArgument("unknown DataType value " + std::to_string(static_cast<int>(type)));
}

std::string_view to_string(DataType type) {
  switch (type) {
    case DataType::f32: return "f32";
    case DataType::f64: return "f64";
    case DataType::i64: return "i64";
    case DataType::f16: return "f16";
  }
  return "unknown";
}

std::string_view to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "unknown";
}

void Request::wait(Timeout timeout) {
  if (!wait_for(timeout)) {
    throw TimeoutError(describe() + " did not complete within " + to_string(timeout));
  }
}

void Transport::check_address(int peer, int tag, std::string_view what) const {
  if (peer < 0 || peer >= size()) {
    throw InvalidArgument(std::string(what) + ": peer rank " + std::to_string(peer) +
                          " is outside 0.." + std::to_string(size() - 1));
  }
  if (tag < 0 || tag > max_tag()) {
    throw InvalidArgument(std::string(what) + ": tag " + std::to_string(tag) +
                          " is outside 0.." + std::to_string(max_tag()));
  }
}

namespace {

template <typename T>
void reduce_typed(std::span<std::byte> acc_bytes, std::span<const std::byte> in_bytes, ReduceOp op) {
  const std::size_t n = acc_bytes.size() / sizeof(T);
  // Element-wise through memcpy: the byte spans need not be aligned for T.
  for (std::size_t i = 0; i < n; ++i) {
    T a, b;
    std::memcpy(&a, acc_bytes.data() + i * sizeof(T), sizeof(T));
    std::memcpy(&b, in_bytes.data() + i * sizeof(T), sizeof(T));
    T r = a;
    switch (op) {
      case ReduceOp::sum: r = a + b; break;
      case ReduceOp::max: r = std::max(a, b); break;
      case ReduceOp::min: r = std::min(a, b); break;
    }
    std::memcpy(acc_bytes.data() + i * sizeof(T), &r, sizeof(T));
  }
}

}  // namespace

void reduce_into(std::span<std::byte> acc, std::span<const std::byte> in, DataType type,
                 ReduceOp op) {
  if (acc.size() != in.size() || acc.size() % size_of(type) != 0) {
    throw InvalidArgument("reduce_into: buffers of " + std::to_string(acc.size()) + " and " +
                          std::to_string(in.size()) + " bytes do not hold the same number of " +
                          std::string(to_string(type)) + " elements");
  }
  switch (type) {
    case DataType::f32: reduce_typed<float>(acc, in, op); break;
    case DataType::f64: reduce_typed<double>(acc, in, op); break;
    case DataType::i64: reduce_typed<std::int64_t>(acc, in, op); break;
    case DataType::f16: {
      if (op != ReduceOp::sum) throw InvalidArgument("reduce_into: f16 supports sum only");
      if (acc.empty()) break;  // nothing to add (and no storage to copy from)
      std::vector<_Float16> a(acc.size() / 2), b(in.size() / 2);  // aligned copies
      std::memcpy(a.data(), acc.data(), acc.size());
      std::memcpy(b.data(), in.data(), in.size());
      add_f16(a.data(), b.data(), a.size());
      std::memcpy(acc.data(), a.data(), acc.size());
      break;
    }
  }
}

void check_reduce_scatter_arguments(std::size_t input_bytes, std::size_t output_bytes,
                                    std::span<const std::size_t> counts, DataType type, int ranks,
                                    int rank) {
  if (counts.size() != static_cast<std::size_t>(ranks)) {
    throw InvalidArgument("reduce-scatter: counts has " + std::to_string(counts.size()) +
                          " entries for " + std::to_string(ranks) + " ranks");
  }
  std::size_t total = 0;
  for (std::size_t c : counts) total += c;
  const std::size_t elem = size_of(type);
  if (input_bytes != total * elem) {
    throw InvalidArgument("reduce-scatter: the input has " + std::to_string(input_bytes) +
                          " bytes but the counts add up to " + std::to_string(total) + " " +
                          std::string(to_string(type)) + " elements");
  }
  if (output_bytes != counts[static_cast<std::size_t>(rank)] * elem) {
    throw InvalidArgument("reduce-scatter: rank " + std::to_string(rank) + "'s output has " +
                          std::to_string(output_bytes) + " bytes for a block of " +
                          std::to_string(counts[static_cast<std::size_t>(rank)]) + " elements");
  }
}

void check_allgather_arguments(std::size_t input, std::size_t output,
                               std::span<const std::size_t> counts, int ranks, int rank,
                               std::string_view unit) {
  if (counts.size() != static_cast<std::size_t>(ranks)) {
    throw InvalidArgument("allgather: counts has " + std::to_string(counts.size()) +
                          " entries for " + std::to_string(ranks) + " ranks");
  }
  const std::size_t mine = counts[static_cast<std::size_t>(rank)];
  if (input != mine) {
    throw InvalidArgument("allgather: rank " + std::to_string(rank) + " contributes " +
                          std::to_string(input) + " " + std::string(unit) + " but counts says " +
                          std::to_string(mine));
  }
  std::size_t total = 0;
  for (std::size_t c : counts) total += c;
  if (output != total) {
    throw InvalidArgument("allgather: output has " + std::to_string(output) + " " +
                          std::string(unit) + " but the contributions total " +
                          std::to_string(total));
  }
}

}  // namespace qccl
