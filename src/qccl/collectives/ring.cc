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
#include <vector>

#include "qccl/collectives/codec_queue.h"
#include "qccl/collectives/codec_steps.h"
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

}  // namespace

void run_ring(Communicator& comm, int tag, SlotLayout& layout, std::span<std::byte> work,
              Reduction* reduction, RingPhases phases, const CollectiveOptions& options,
              Timeout timeout, std::string_view operation, CodecQueue* codec) {
  const long long n = comm.size();
  const long long r = comm.rank();
  const bool do_rs = phases != RingPhases::allgather;
  const bool do_ag = phases != RingPhases::reduce_scatter;
  if (n == 1) {
    if (codec != nullptr) {
      plan_ring_codec(*codec, n, r, layout.chunks_per_segment(), do_rs);
      finish_segment(*codec, r, layout.chunks_per_segment());
      codec->drain();
    }
    return;
  }
  if (do_rs && reduction == nullptr) {
    throw InvalidArgument(std::string(operation) + ": reduce-scatter needs a reduction");
  }
  const std::size_t k = layout.chunks_per_segment();
  const std::size_t rs_steps = do_rs ? static_cast<std::size_t>(n - 1) : 0;
  const std::size_t steps = rs_steps + (do_ag ? static_cast<std::size_t>(n - 1) : 0);
  const std::size_t transfers = steps * k;
  const int right = static_cast<int>((r + 1) % n);
  const int left = static_cast<int>((r + n - 1) % n);
  Transport& transport = comm.transport();

  auto is_rs = [&](std::size_t t) { return t / k < rs_steps; };
  auto send_segment = [&](std::size_t t) {
    const auto step = static_cast<long long>(t / k);
    return is_rs(t) ? mod(r - step - 1, n) : mod(r - (step - static_cast<long long>(rs_steps)), n);
  };
  auto recv_segment = [&](std::size_t t) {
    const auto step = static_cast<long long>(t / k);
    return is_rs(t) ? mod(r - step - 2, n)
                    : mod(r - (step - static_cast<long long>(rs_steps)) - 1, n);
  };
  auto slot_index = [&](std::size_t segment, std::size_t t) { return segment * k + t % k; };

  const std::size_t window = std::max<std::size_t>(1, static_cast<std::size_t>(options.window));
  std::span<std::byte> staging;
  if (do_rs) staging = comm.scratch(Scratch::staging, window * layout.max_slot_capacity());
  auto staging_buffer = [&](std::size_t t, std::size_t capacity) {
    return staging.subspan((t % window) * layout.max_slot_capacity(), capacity);
  };

  std::vector<RequestPtr> sends(transfers);
  std::vector<RequestPtr> recvs(transfers);
  // The send that last read each slot: an allgather receive must not
  // overwrite a slot whose reduce-scatter send is still in flight.
  std::vector<std::size_t> last_send(layout.slot_count(), transfers);

  auto send = [&](std::size_t t) {
    const std::size_t index = slot_index(send_segment(t), t);
    if (codec != nullptr) codec->require_encoded(index);
    const Slot& slot = layout.slot(index);
    sends[t] = transport.isend(right, tag, work.subspan(slot.offset, slot.size));
    last_send[index] = t;
  };
  auto post_recv = [&](std::size_t t) {
    const std::size_t index = slot_index(recv_segment(t), t);
    const Slot& slot = layout.slot(index);
    if (is_rs(t)) {
      recvs[t] = transport.irecv(left, tag, staging_buffer(t, slot.capacity));
      return;
    }
    if (last_send[index] < transfers && sends[last_send[index]]) {
      comm.wait(*sends[last_send[index]], timeout, operation);
    }
    recvs[t] = transport.irecv(left, tag, work.subspan(slot.offset, slot.capacity));
  };
  auto check_exact = [&](const Slot& slot, std::size_t received, std::size_t t) {
    if (layout.exact_sizes() && received != slot.capacity) {
      throw CommError(std::string(operation) + ": rank " + std::to_string(r) + " received " +
                      std::to_string(received) + " bytes from rank " + std::to_string(left) +
                      " for a chunk of " + std::to_string(slot.capacity) + " bytes (transfer " +
                      std::to_string(t) + "): the ranks disagree on the data layout");
    }
  };

  // Waits for `request`, doing the queue's work while it is pending.
  auto wait = [&](Request& request) {
    if (codec != nullptr) {
      try {
        while (!request.test() && codec->step()) {
        }
      } catch (const CommError& e) {
        throw CommError(std::string(operation) + ": " + e.what());
      }
    }
    comm.wait(request, timeout, operation);
  };
  if (codec != nullptr) {
    plan_ring_codec(*codec, n, r, k, do_rs);
    if (!do_rs) finish_segment(*codec, r, k);  // allgather alone: final from the start
  }

  std::size_t posted = 0;
  for (; posted < std::min(window, transfers); ++posted) post_recv(posted);
  for (std::size_t t = 0; t < std::min(k, transfers); ++t) send(t);

  for (std::size_t t = 0; t < transfers; ++t) {
    wait(*recvs[t]);
    const std::size_t received = recvs[t]->bytes();
    const std::size_t index = slot_index(recv_segment(t), t);
    Slot& slot = layout.slot(index);
    check_exact(slot, received, t);
    if (is_rs(t)) {
      if (codec != nullptr) codec->require_encoded(index);
      const ReduceContext context{slot.elements.first, slot.elements.count,
                                  static_cast<int>(r), static_cast<int>(t / k)};
      reduce_into_slot(*reduction, slot, staging_buffer(t, received), work, context, operation);
    } else {
      slot.size = received;
    }
    recvs[t].reset();
    if (posted < transfers) post_recv(posted++);
    if (t + k < transfers) send(t + k);
    // Final: this rank's segment after the last reduction, any slot the
    // allgather received.
    if (codec != nullptr) {
      if (!is_rs(t) || t / k + 1 == rs_steps) codec->finished(index);
      codec->step();  // at least one piece per transfer, even when receives never wait
    }
  }
  if (codec != nullptr) codec->drain();
  for (auto& s : sends) {
    if (s) comm.wait(*s, timeout, operation);
  }
}

}  // namespace qccl
