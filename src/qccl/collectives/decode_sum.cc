#include "qccl/collectives/decode_sum.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "qccl/collectives/codec_steps.h"
#include "qccl/collectives/schedule.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

// A float view of scratch space: the communicator's buffers come from
// operator new, aligned for any fundamental type.
std::span<float> float_scratch(Communicator& comm, Scratch which, std::size_t count) {
  auto bytes = comm.scratch(which, count * sizeof(float));
  return {reinterpret_cast<float*>(bytes.data()), count};
}

// output = decoded(0), then output += decoded(q) for q = 1, 2, ...: one fixed
// order of fp32 additions.
void add_in_rank_order(std::span<float> output, std::span<const float> decoded, bool first) {
  if (first) {
    std::copy(decoded.begin(), decoded.end(), output.begin());
    return;
  }
  float* __restrict out = output.data();
  const float* __restrict in = decoded.data();
  for (std::size_t i = 0; i < output.size(); ++i) out[i] += in[i];
}

// output = (decoded(0) + decoded(1) + ... ) / divide_by, the sum in fp32
// in rank order, decode_rank(q, into) decoding rank q's values. The decoded
// values are finite, so a non-finite sum is an overflow: when dividing,
// those elements are summed again in double, which holds any sum of fp32
// values, and divided there; |mean| <= the largest |decoded value|, so it
// is finite in fp32 too. A second decode of every rank happens only then.
template <class DecodeRank>
void sum_in_rank_order(std::size_t ranks, std::span<float> output, std::span<float> decoded,
                       int divide_by, DecodeRank&& decode_rank) {
  for (std::size_t q = 0; q < ranks; ++q) {
    decode_rank(q, decoded);
    add_in_rank_order(output, decoded, q == 0);
  }
  if (divide_by == 1) return;
  std::vector<std::size_t> overflowed;
  const auto n = static_cast<float>(divide_by);
  for (std::size_t i = 0; i < output.size(); ++i) {
    if (!std::isfinite(output[i])) overflowed.push_back(i);
    output[i] /= n;
  }
  if (overflowed.empty()) return;
  std::vector<double> sums(overflowed.size(), 0.0);
  for (std::size_t q = 0; q < ranks; ++q) {
    decode_rank(q, decoded);
    for (std::size_t j = 0; j < overflowed.size(); ++j) sums[j] += decoded[overflowed[j]];
  }
  for (std::size_t j = 0; j < overflowed.size(); ++j) {
    output[overflowed[j]] = static_cast<float>(sums[j] / divide_by);
  }
}

void require_encoded(const Reduction& reduction, std::string_view operation) {
  if (reduction.identity_layout()) {
    throw InvalidArgument(std::string(operation) + ": '" + reduction.name() +
                          "' sums in transit; use the ring or halving-doubling body");
  }
}

// The exchange of reduce-scatter by exchange: this rank sends the encoded
// chunks of block q (its slots in `work`) to rank q, and receives every other
// rank's chunks of its own block into `incoming`, `block_bytes` per source in
// rank order. Returns the bytes received per (source, chunk), index
// source·K + chunk (0 for this rank's own).
std::vector<std::size_t> send_blocks_to_owners(Communicator& comm, int tag,
                                               const SlotLayout& layout,
                                               std::span<const std::byte> work,
                                               std::span<std::byte> incoming,
                                               std::size_t block_bytes, Timeout timeout) {
  constexpr std::string_view op = "reduce-scatter by exchange";
  const auto n = static_cast<std::size_t>(comm.size());
  const auto me = static_cast<std::size_t>(comm.rank());
  const std::size_t k = layout.chunks_per_segment();
  Transport& transport = comm.transport();
  std::vector<RequestPtr> recvs(n * k), sends;
  for (std::size_t s = 1; s < n; ++s) {
    const std::size_t source = (me + n - s) % n;
    std::size_t at = source * block_bytes;
    for (std::size_t c = 0; c < k; ++c) {
      const Slot& slot = layout.slot(me * k + c);
      recvs[source * k + c] =
          transport.irecv(static_cast<int>(source), tag, incoming.subspan(at, slot.capacity));
      at += slot.capacity;
    }
  }
  for (std::size_t s = 1; s < n; ++s) {
    const std::size_t peer = (me + s) % n;
    for (std::size_t c = 0; c < k; ++c) {
      const Slot& slot = layout.slot(peer * k + c);
      sends.push_back(transport.isend(static_cast<int>(peer), tag, work.subspan(slot.offset, slot.size)));
    }
  }
  std::vector<std::size_t> received(n * k, 0);
  for (std::size_t i = 0; i < recvs.size(); ++i) {
    if (!recvs[i]) continue;
    comm.wait(*recvs[i], timeout, op);
    received[i] = recvs[i]->bytes();
  }
  for (auto& send : sends) comm.wait(*send, timeout, op);
  return received;
}

}  // namespace

void allreduce_by_allgather_body(Communicator& comm, int tag, std::span<const float> input,
                                 std::span<float> output, Reduction& reduction,
                                 const CollectiveOptions& options, std::span<float> own,
                                 int divide_by) {
  require_encoded(reduction, "allreduce by allgather");
  const std::size_t d = input.size();
  if (d == 0) return;
  const auto n = static_cast<std::size_t>(comm.size());
  const auto me = static_cast<std::size_t>(comm.rank());
  // Segment q: rank q's encoding of the whole vector.
  const std::vector<Range> segments(n, Range{0, d});
  SlotLayout layout(segments, chunks_for(segments, options.chunk_bytes), reduction.granularity(),
                    reduction);
  auto work = comm.scratch(Scratch::work, layout.total_bytes());
  {
    PhaseScope timed(options.phases, &PhaseTimes::encode);
    encode_slots(reduction, layout, segment_slots(layout, me), input, 0, work, own);
  }
  const Timeout timeout = comm.timeout(options.timeout);
  run_schedule(comm, tag, layout, work, nullptr, SchedulePhases::allgather, options, timeout,
               "allreduce by allgather");
  PhaseScope timed(options.phases, &PhaseTimes::decode);
  auto decoded = float_scratch(comm, Scratch::decoded, d);
  sum_in_rank_order(n, output, decoded, divide_by, [&](std::size_t q, std::span<float> into) {
    decode_slots(reduction, layout, work, segment_slots(layout, q), into, 0);
  });
}

void reduce_scatter_by_exchange_body(Communicator& comm, int tag, std::span<const float> input,
                                     std::span<const Range> blocks, std::span<float> output,
                                     Reduction& reduction, const CollectiveOptions& options,
                                     std::span<float> own, int divide_by) {
  constexpr std::string_view op = "reduce-scatter by exchange";
  require_encoded(reduction, op);
  if (input.empty()) return;
  const auto n = static_cast<std::size_t>(comm.size());
  const auto me = static_cast<std::size_t>(comm.rank());
  const Range mine = blocks[me];
  SlotLayout layout(blocks, chunks_for(blocks, options.chunk_bytes), reduction.granularity(),
                    reduction);
  auto work = comm.scratch(Scratch::work, layout.total_bytes());
  {
    PhaseScope timed(options.phases, &PhaseTimes::encode);
    encode_slots(reduction, layout, all_slots(layout), input, 0, work, own);
  }
  const std::size_t k = layout.chunks_per_segment();
  const SlotRange own_slots = segment_slots(layout, me);
  std::size_t block_bytes = 0;
  for (std::size_t c = 0; c < k; ++c) block_bytes += layout.slot(own_slots.first + c).capacity;
  auto incoming = comm.scratch(Scratch::staging, block_bytes * n);
  const auto received = send_blocks_to_owners(comm, tag, layout, work, incoming, block_bytes,
                                              comm.timeout(options.timeout));

  PhaseScope timed(options.phases, &PhaseTimes::decode);
  auto block = float_scratch(comm, Scratch::decoded, mine.count);
  sum_in_rank_order(n, output, block, divide_by, [&](std::size_t q, std::span<float> into) {
    std::size_t at = q * block_bytes;
    for (std::size_t c = 0; c < k; ++c) {
      const Slot& slot = layout.slot(own_slots.first + c);
      const std::size_t region = at;
      at += slot.capacity;
      if (slot.elements.count == 0) continue;
      const auto bytes = q == me ? work.subspan(slot.offset, slot.size)
                                 : incoming.subspan(region, received[q * k + c]);
      reduction.decode(bytes, slot.elements.first,
                       into.subspan(slot.elements.first - mine.first, slot.elements.count));
    }
  });
}

}  // namespace qccl
