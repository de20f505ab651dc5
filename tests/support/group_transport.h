// A transport that forwards to another and also offers a process group's
// whole-vector integer sum (codecs/group_data_path.h), so that the codecs'
// process-group data path runs on in-process ranks as it does on a
// torch.distributed group: integers of 1, 4 or 8 bytes summed exactly
// (widened to int64 for the forwarded allreduce, then narrowed as a
// group's integer sum of that width would wrap).
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "qccl/codecs/group_data_path.h"
#include "qccl/transport/transport.h"

namespace qccl::test {

class GroupLikeTransport final : public Transport, public GroupCollectives {
 public:
  explicit GroupLikeTransport(Transport& inner) : inner_(inner) {}

  int sums() const { return sums_; }

  void sum_integers(std::span<std::byte> data, std::size_t width, Timeout timeout) override {
    if (width != 1 && width != 4 && width != 8) throw std::invalid_argument("integer width");
    ++sums_;
    const std::size_t count = data.size() / width;
    std::vector<std::int64_t> wide(count);
    for (std::size_t i = 0; i < count; ++i) wide[i] = read(data.data() + i * width, width);
    inner_.allreduce(std::as_writable_bytes(std::span(wide)), DataType::i64, ReduceOp::sum, timeout);
    for (std::size_t i = 0; i < count; ++i) write(wide[i], data.data() + i * width, width);
  }

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  int max_tag() const override { return inner_.max_tag(); }
  std::string_view name() const override { return "group-like test transport"; }
  RequestPtr isend(int peer, int tag, std::span<const std::byte> data) override {
    return inner_.isend(peer, tag, data);
  }
  RequestPtr irecv(int peer, int tag, std::span<std::byte> buffer) override {
    return inner_.irecv(peer, tag, buffer);
  }
  void allreduce(std::span<std::byte> data, DataType type, ReduceOp op, Timeout timeout) override {
    inner_.allreduce(data, type, op, timeout);
  }
  void reduce_scatter(std::span<const std::byte> input, std::span<std::byte> output,
                      std::span<const std::size_t> counts, DataType type, ReduceOp op,
                      Timeout timeout) override {
    inner_.reduce_scatter(input, output, counts, type, op, timeout);
  }
  void allgather(std::span<const std::byte> input, std::span<std::byte> output,
                 std::span<const std::size_t> byte_counts, Timeout timeout) override {
    inner_.allgather(input, output, byte_counts, timeout);
  }
  void barrier(Timeout timeout) override { inner_.barrier(timeout); }
  std::unique_ptr<Transport> duplicate(Timeout timeout) override { return inner_.duplicate(timeout); }
  std::unique_ptr<Transport> split(int color, int key, Timeout timeout) override {
    return inner_.split(color, key, timeout);
  }
  int host_key(Timeout) override { return inner_.rank(); }  // a group is one level
  void interrupt(std::string_view reason) noexcept override { inner_.interrupt(reason); }
  void abort(std::string_view reason, int exit_code) noexcept override {
    inner_.abort(reason, exit_code);
  }

 private:
  static std::int64_t read(const std::byte* at, std::size_t width) {
    if (width == 1) return static_cast<std::int8_t>(*at);
    if (width == 4) {
      std::int32_t v;
      std::memcpy(&v, at, 4);
      return v;
    }
    std::int64_t v;
    std::memcpy(&v, at, 8);
    return v;
  }
  static void write(std::int64_t v, std::byte* at, std::size_t width) {
    if (width == 1) {
      *at = static_cast<std::byte>(static_cast<std::uint8_t>(v));
    } else if (width == 4) {
      const auto narrow = static_cast<std::int32_t>(v);
      std::memcpy(at, &narrow, 4);
    } else {
      std::memcpy(at, &v, 8);
    }
  }

  Transport& inner_;
  int sums_ = 0;
};

}  // namespace qccl::test
