// Ring reduce-scatter + allgather, pipelined in chunks.
//
// Each segment s (one per rank) is split into K chunks, so a step of the ring
// is K messages and a whole pass is a sequence of transfers t = step*K + c.
// With rank r, left neighbour r-1 and right neighbour r+1 (mod n):
//   reduce-scatter step s: send segment (r-s-1), receive segment (r-s-2) and
//     reduce it into the local one; after n-1 steps rank r owns segment r.
//   allgather step s: send segment (r-s), receive segment (r-s-1) in place.
// In both phases the data sent by transfer t+K is exactly what transfer t
// received (reduced or stored), so transfer t+K is sent as soon as transfer t
// is processed: chunks flow around the ring back to back (the pipelining
// NCCL's recvReduceSend / recvCopySend steps express). Receives are posted in
// transfer order with at most `window` in flight; reduce-scatter receives land
// in `window` staging buffers, allgather receives go straight to their slot.
//
// Every chunk is reduced once per hop by the rank that receives it and then
// forwarded as bytes, so all ranks end with identical data (the owner-reduces
// invariant), whatever the reduction's rounding.
//
// With a CodecQueue, the ring encodes each slot just before its first use and
// hands each slot to the queue once it is final; it works off the queue while
// a receive is pending, and one piece after each transfer in any case (see
// codec_queue.h). Reduce-scatter first uses segment r-1 (sent at step 0) and
// then r-s-2 (reduced into at step s), so the encode order is segment r-1,
// r-2, ..., r-n; allgather alone sends only segment r. Rank r's segment is
// final after the last reduce-scatter step, every other segment once the
// allgather has received it.
#include "qccl/collectives/ring.h"

#include <algorithm>
#include <string>
#include <vector>

#include "qccl/collectives/codec_queue.h"
#include "qccl/collectives/codec_steps.h"
#include "qccl/collectives/receive_window.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

std::size_t mod(long long x, long long n) { return static_cast<std::size_t>(((x % n) + n) % n); }

// The queue's plan for rank r (see the top of this file).
void plan_ring_codec(CodecQueue& codec, long long n, long long r, std::size_t k, bool do_rs) {
  std::vector<std::size_t> order;
  const long long segments = do_rs ? n : 1;
  for (long long j = 0; j < segments; ++j) {
    const std::size_t segment = do_rs ? mod(r - 1 - j, n) : static_cast<std::size_t>(r);
    for (std::size_t c = 0; c < k; ++c) order.push_back(segment * k + c);
  }
  codec.plan_encodes(std::move(order));
}

void finish_segment(CodecQueue& codec, long long segment, std::size_t k) {
  for (std::size_t c = 0; c < k; ++c) codec.finished(static_cast<std::size_t>(segment) * k + c);
}

// One rank's pass over the ring: the schedule of transfers t = step·K + c,
// its requests, and what each transfer does on arrival.
class RingPass {
 public:
  RingPass(Communicator& comm, int tag, SlotLayout& layout, std::span<std::byte> work,
           Reduction* reduction, RingPhases phases, const CollectiveOptions& options,
           Timeout timeout, std::string_view operation, CodecQueue* codec)
      : comm_(comm), tag_(tag), layout_(layout), work_(work), reduction_(reduction),
        timeout_(timeout), operation_(operation), codec_(codec), phases_(options.phases),
        n_(comm.size()), r_(comm.rank()),
        k_(layout.chunks_per_segment()),
        rs_steps_(phases != RingPhases::allgather ? static_cast<std::size_t>(n_ - 1) : 0),
        transfers_((rs_steps_ + (phases != RingPhases::reduce_scatter ? n_ - 1 : 0)) * k_),
        right_(static_cast<int>((r_ + 1) % n_)), left_(static_cast<int>((r_ + n_ - 1) % n_)),
        window_(receive_window(options, layout)),
        sends_(transfers_), recvs_(transfers_), last_send_(layout.slot_count(), transfers_) {
    if (rs_steps_ > 0) staging_ = comm.scratch(Scratch::staging, window_ * layout.max_slot_capacity());
  }

  // Receives run `window` ahead; each arrival lets transfer t + K go.
  void run() {
    if (codec_ != nullptr) {
      plan_ring_codec(*codec_, n_, r_, k_, rs_steps_ > 0);
      if (rs_steps_ == 0) finish_segment(*codec_, r_, k_);  // allgather alone: final from the start
    }
    std::size_t posted = 0;
    for (; posted < std::min(window_, transfers_); ++posted) post_recv(posted);
    for (std::size_t t = 0; t < std::min(k_, transfers_); ++t) send(t);
    for (std::size_t t = 0; t < transfers_; ++t) {
      arrive(t);
      if (posted < transfers_) post_recv(posted++);
      if (t + k_ < transfers_) send(t + k_);
      // Final: this rank's segment after the last reduction, any slot the
      // allgather received.
      if (codec_ != nullptr) {
        if (!is_rs(t) || t / k_ + 1 == rs_steps_) codec_->finished(recv_slot(t));
        codec_->step();  // at least one piece per transfer, even when receives never wait
      }
    }
    if (codec_ != nullptr) codec_->drain();
    for (auto& s : sends_) {
      if (s) comm_.wait(*s, timeout_, operation_);
    }
  }

 private:
  bool is_rs(std::size_t t) const { return t / k_ < rs_steps_; }
  // The step within its phase.
  long long phase_step(std::size_t t) const {
    const auto step = static_cast<long long>(t / k_);
    return is_rs(t) ? step : step - static_cast<long long>(rs_steps_);
  }
  std::size_t send_slot(std::size_t t) const {
    const long long segment = is_rs(t) ? r_ - phase_step(t) - 1 : r_ - phase_step(t);
    return mod(segment, n_) * k_ + t % k_;
  }
  std::size_t recv_slot(std::size_t t) const {
    const long long segment = is_rs(t) ? r_ - phase_step(t) - 2 : r_ - phase_step(t) - 1;
    return mod(segment, n_) * k_ + t % k_;
  }
  std::span<std::byte> staging_buffer(std::size_t t, std::size_t capacity) const {
    return staging_.subspan((t % window_) * layout_.max_slot_capacity(), capacity);
  }

  void send(std::size_t t) {
    const std::size_t index = send_slot(t);
    if (codec_ != nullptr) codec_->require_encoded(index);
    const Slot& slot = layout_.slot(index);
    sends_[t] = comm_.transport().isend(right_, tag_, work_.subspan(slot.offset, slot.size));
    last_send_[index] = t;
  }

  // Reduce-scatter receives land in staging; allgather receives go straight
  // to their slot, once the send that last read it has finished.
  void post_recv(std::size_t t) {
    const std::size_t index = recv_slot(t);
    const Slot& slot = layout_.slot(index);
    if (is_rs(t)) {
      recvs_[t] = comm_.transport().irecv(left_, tag_, staging_buffer(t, slot.capacity));
      return;
    }
    if (last_send_[index] < transfers_ && sends_[last_send_[index]]) {
      comm_.wait(*sends_[last_send_[index]], timeout_, operation_);
    }
    recvs_[t] = comm_.transport().irecv(left_, tag_, work_.subspan(slot.offset, slot.capacity));
  }

  // Waits for transfer t's receive, then reduces it into its slot
  // (reduce-scatter) or records its size (allgather).
  void arrive(std::size_t t) {
    wait(*recvs_[t]);
    const std::size_t received = recvs_[t]->bytes();
    const std::size_t index = recv_slot(t);
    Slot& slot = layout_.slot(index);
    check_exact(slot, received, t);
    if (is_rs(t)) {
      if (codec_ != nullptr) codec_->require_encoded(index);
      const ReduceContext context{slot.elements.first, slot.elements.count, static_cast<int>(r_),
                                  static_cast<int>(t / k_)};
      reduce_into_slot(*reduction_, slot, staging_buffer(t, received), work_, context, operation_,
                       phases_);
    } else {
      slot.size = received;
    }
    recvs_[t].reset();
  }

  // Waits for `request`, doing the queue's work while it is pending.
  void wait(Request& request) {
    if (codec_ != nullptr) {
      try {
        while (!request.test() && codec_->step()) {
        }
      } catch (const CommError& e) {
        throw CommError(std::string(operation_) + ": " + e.what());
      }
    }
    comm_.wait(request, timeout_, operation_);
  }

  void check_exact(const Slot& slot, std::size_t received, std::size_t t) const {
    if (layout_.exact_sizes() && received != slot.capacity) {
      throw CommError(std::string(operation_) + ": rank " + std::to_string(r_) + " received " +
                      std::to_string(received) + " bytes from rank " + std::to_string(left_) +
                      " for a chunk of " + std::to_string(slot.capacity) + " bytes (transfer " +
                      std::to_string(t) + "): the ranks disagree on the data layout");
    }
  }

  Communicator& comm_;
  int tag_;
  SlotLayout& layout_;
  std::span<std::byte> work_;
  Reduction* reduction_;
  Timeout timeout_;
  std::string_view operation_;
  CodecQueue* codec_;
  PhaseTimes* phases_;  // where reductions add their time, or null
  long long n_, r_;
  std::size_t k_, rs_steps_, transfers_;
  int right_, left_;
  std::size_t window_;
  std::span<std::byte> staging_;
  std::vector<RequestPtr> sends_, recvs_;
  // The send that last read each slot: an allgather receive must not
  // overwrite a slot whose reduce-scatter send is still in flight.
  std::vector<std::size_t> last_send_;
};

}  // namespace

void run_ring(Communicator& comm, int tag, SlotLayout& layout, std::span<std::byte> work,
              Reduction* reduction, RingPhases phases, const CollectiveOptions& options,
              Timeout timeout, std::string_view operation, CodecQueue* codec) {
  const bool do_rs = phases != RingPhases::allgather;
  if (comm.size() == 1) {
    if (codec != nullptr) {
      plan_ring_codec(*codec, 1, 0, layout.chunks_per_segment(), do_rs);
      finish_segment(*codec, 0, layout.chunks_per_segment());
      codec->drain();
    }
    return;
  }
  if (do_rs && reduction == nullptr) {
    throw InvalidArgument(std::string(operation) + ": reduce-scatter needs a reduction");
  }
  RingPass(comm, tag, layout, work, reduction, phases, options, timeout, operation, codec).run();
}

}  // namespace qccl
