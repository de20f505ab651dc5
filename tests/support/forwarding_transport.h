// A transport that forwards every operation to another: the base of test
// transports that watch or extend one (counting_transport.h,
// group_transport.h), which override only what they change.
#pragma once

#include <memory>

#include "qccl/transport/transport.h"

namespace qccl::test {

class ForwardingTransport : public Transport {
 public:
  explicit ForwardingTransport(Transport& inner) : inner_(inner) {}

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  int max_tag() const override { return inner_.max_tag(); }
  std::string_view name() const override { return inner_.name(); }
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
  int host_key(Timeout timeout) override { return inner_.host_key(timeout); }
  void interrupt(std::string_view reason) noexcept override { inner_.interrupt(reason); }
  void abort(std::string_view reason, int exit_code) noexcept override {
    inner_.abort(reason, exit_code);
  }

 protected:
  Transport& inner() { return inner_; }

 private:
  Transport& inner_;
};

}  // namespace qccl::test
