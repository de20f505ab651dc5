// A transport that forwards to another and also offers a process group's
// whole-vector integer sum (codecs/group_data_path.h), so that the codecs'
// process-group data path runs on in-process ranks as it does on a
// torch.distributed group: integers of 1, 4 or 8 bytes summed exactly
// (widened to int64 for the forwarded allreduce, then narrowed as a
// group's integer sum of that width would wrap).
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "forwarding_transport.h"
#include "qccl/codecs/group_data_path.h"

namespace qccl::test {

class GroupLikeTransport final : public ForwardingTransport, public GroupCollectives {
 public:
  using ForwardingTransport::ForwardingTransport;

  int sums() const { return sums_; }
  // The group's allgathers of bytes, and the bytes this rank sent point to
  // point (the steps' small argument-and-norm checks): a whole-vector data
  // path sends its data by neither of these.
  int allgathers() const { return allgathers_; }
  std::size_t p2p_bytes() const { return p2p_bytes_; }

  void allgather(std::span<const std::byte> input, std::span<std::byte> output,
                 std::span<const std::size_t> byte_counts, Timeout timeout) override {
    ++allgathers_;
    inner().allgather(input, output, byte_counts, timeout);
  }
  RequestPtr isend(int peer, int tag, std::span<const std::byte> data) override {
    p2p_bytes_ += data.size();
    return inner().isend(peer, tag, data);
  }

  void sum_integers(std::span<std::byte> data, std::size_t width, Timeout timeout) override {
    if (width != 1 && width != 4 && width != 8) throw std::invalid_argument("integer width");
    ++sums_;
    const std::size_t count = data.size() / width;
    std::vector<std::int64_t> wide(count);
    for (std::size_t i = 0; i < count; ++i) wide[i] = read(data.data() + i * width, width);
    inner().allreduce(std::as_writable_bytes(std::span(wide)), DataType::i64, ReduceOp::sum, timeout);
    for (std::size_t i = 0; i < count; ++i) write(wide[i], data.data() + i * width, width);
  }

  std::string_view name() const override { return "group-like test transport"; }
  int host_key(Timeout) override { return rank(); }  // a group is one level

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

  int sums_ = 0;
  int allgathers_ = 0;
  std::size_t p2p_bytes_ = 0;
};

}  // namespace qccl::test
