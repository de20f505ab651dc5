// A transport that forwards to another and counts its transport-level
// collectives (the latency-bound exchanges a call makes before data moves)
// and the messages and bytes it sends point to point.
#pragma once

#include <atomic>

#include "forwarding_transport.h"

namespace qccl::test {

class CountingTransport final : public ForwardingTransport {
 public:
  using ForwardingTransport::ForwardingTransport;

  int exchanges() const { return exchanges_.load(); }
  std::size_t sent_bytes() const { return sent_bytes_.load(); }
  int sent_messages() const { return sent_messages_.load(); }

  RequestPtr isend(int peer, int tag, std::span<const std::byte> data) override {
    sent_bytes_ += data.size();
    ++sent_messages_;
    return ForwardingTransport::isend(peer, tag, data);
  }
  void allreduce(std::span<std::byte> data, DataType type, ReduceOp op, Timeout timeout) override {
    ++exchanges_;
    ForwardingTransport::allreduce(data, type, op, timeout);
  }
  void reduce_scatter(std::span<const std::byte> input, std::span<std::byte> output,
                      std::span<const std::size_t> counts, DataType type, ReduceOp op,
                      Timeout timeout) override {
    ++exchanges_;
    ForwardingTransport::reduce_scatter(input, output, counts, type, op, timeout);
  }
  void allgather(std::span<const std::byte> input, std::span<std::byte> output,
                 std::span<const std::size_t> byte_counts, Timeout timeout) override {
    ++exchanges_;
    ForwardingTransport::allgather(input, output, byte_counts, timeout);
  }
  void barrier(Timeout timeout) override {
    ++exchanges_;
    ForwardingTransport::barrier(timeout);
  }

 private:
  std::atomic<int> exchanges_{0};
  std::atomic<std::size_t> sent_bytes_{0};
  std::atomic<int> sent_messages_{0};
};

}  // namespace qccl::test
