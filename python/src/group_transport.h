// qccl's transport over a caller's torch.distributed process group
// (docs/pytorch.md, the process-group mode): every operation calls the
// Python object `ops` (qccl/_group_ops.py), which runs it on the group with
// torch tensors that alias qccl's memory. The codecs' data then moves by
// the group's whole-vector collectives (group_data_path.h); the small
// argument-and-norm check of each step goes point to point.
//
// Each call takes the GIL. The hook calls this transport on the thread
// that runs the DDP hook, in bucket order on every rank, so the group sees
// qccl's collectives in the same order everywhere, interleaved with DDP's
// own as the reducer orders them.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "qccl/codecs/group_data_path.h"
#include "qccl/transport/transport.h"

namespace qccl::python {

class GroupTransport final : public Transport, public GroupCollectives {
 public:
  // `ops` has rank, size and the methods isend, irecv, wait, done,
  // allreduce, allgather, barrier (qccl/_group_ops.py); a message is waited
  // for up to `wait_limit`. Call with the GIL.
  GroupTransport(pybind11::object ops, Timeout wait_limit);
  ~GroupTransport() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int max_tag() const override { return 1 << 24; }
  std::string_view name() const override { return "torch.distributed process group"; }

  RequestPtr isend(int peer, int tag, std::span<const std::byte> data) override;
  RequestPtr irecv(int peer, int tag, std::span<std::byte> buffer) override;
  void allreduce(std::span<std::byte> data, DataType type, ReduceOp op, Timeout timeout) override;
  void reduce_scatter(std::span<const std::byte> input, std::span<std::byte> output,
                      std::span<const std::size_t> counts, DataType type, ReduceOp op,
                      Timeout timeout) override;
  void allgather(std::span<const std::byte> input, std::span<std::byte> output,
                 std::span<const std::size_t> byte_counts, Timeout timeout) override;
  void barrier(Timeout timeout) override;
  std::unique_ptr<Transport> duplicate(Timeout timeout) override;
  // The process group is one level: no hierarchical algorithm here.
  std::unique_ptr<Transport> split(int color, int key, Timeout timeout) override;
  int host_key(Timeout) override { return rank_; }
  void interrupt(std::string_view) noexcept override {}
  void abort(std::string_view reason, int exit_code) noexcept override;

  void sum_integers(std::span<std::byte> data, std::size_t width, Timeout timeout) override;

 private:
  pybind11::object ops_;
  int rank_ = 0;
  int size_ = 1;
  Timeout wait_limit_;
};

}  // namespace qccl::python
