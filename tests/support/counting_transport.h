// A transport that forwards to another and counts its transport-level
// collectives (the latency-bound exchanges a call makes before data moves)
// and the messages and bytes it sends point to point.
#pragma once

#include <atomic>
#include <memory>

#include "qccl/transport/transport.h"

namespace qccl::test {

class CountingTransport final : public Transport {
 public:
  explicit CountingTransport(Transport& inner) : inner_(inner) {}

  int exchanges() const { return exchanges_.load(); }
  std::size_t sent_bytes() const { return sent_bytes_.load(); }
  int sent_messages() const { return sent_messages_.load(); }

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  int max_tag() const override { return inner_.max_tag(); }
  std::string_view name() const override { return inner_.name(); }
  RequestPtr isend(int peer, int tag, std::span<const std::byte> data) override {
    sent_bytes_ += data.size();
    ++sent_messages_;
    return inner_.isend(peer, tag, data);
  }
  RequestPtr irecv(int peer, int tag, std::span<std::byte> buffer) override {
    return inner_.irecv(peer, tag, buffer);
  }
  void allreduce(std::span<std::byte> data, DataType type, ReduceOp op, Timeout timeout) override {
    ++exchanges_;
    inner_.allreduce(data, type, op, timeout);
  }
  void reduce_scatter(std::span<const std::byte> input, std::span<std::byte> output,
                      std::span<const std::size_t> counts, DataType type, ReduceOp op,
                      Timeout timeout) override {
    ++exchanges_;
    inner_.reduce_scatter(input, output, counts, type, op, timeout);
  }
  void allgather(std::span<const std::byte> input, std::span<std::byte> output,
                 std::span<const std::size_t> byte_counts, Timeout timeout) override {
    ++exchanges_;
    inner_.allgather(input, output, byte_counts, timeout);
  }
  void barrier(Timeout timeout) override {
    ++exchanges_;
    inner_.barrier(timeout);
  }
  std::unique_ptr<Transport> duplicate(Timeout timeout) override { return inner_.duplicate(timeout); }
  std::unique_ptr<Transport> split(int color, int key, Timeout timeout) override {
    return inner_.split(color, key, timeout);
  }
  int host_key(Timeout timeout) override { return inner_.host_key(timeout); }
  void interrupt(std::string_view reason) noexcept override { inner_.interrupt(reason); }
  void abort(std::string_view reason, int exit_code) noexcept override {
    inner_.abort(reason, exit_code);
  }

 private:
  Transport& inner_;
  std::atomic<int> exchanges_{0};
  std::atomic<std::size_t> sent_bytes_{0};
  std::atomic<int> sent_messages_{0};
};

}  // namespace qccl::test
