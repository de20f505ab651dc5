#include "qccl/collectives/decode_sum.h"

#include <algorithm>
#include <vector>

#include "qccl/collectives/codec_steps.h"
#include "qccl/collectives/schedule.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

// One chunk of a decode-and-sum: the elements [first, first + count) of the
// vector (the decoder's `first`), at output[at, at + count).
struct SumChunk {
  std::size_t first = 0;
  std::size_t at = 0;
  std::size_t count = 0;
};

// output = (decoded(0) + decoded(1) + ... ) / divide_by: the fp32 sum in
// rank order, then one fp32 division (divide_sums), bytes_of(q, c)
// being rank q's encoding of chunk c. It goes chunk by chunk (the
// pipeline's chunks, at most chunk_bytes of fp32), each rank's decoding
// added while the chunk's running sum is still in the cache
// (Encoding::decode_add, fused where the encoding has a kernel for it),
// where decoding each rank's whole vector into scratch space and adding it
// streamed that vector through memory once per rank. The additions and
// their order are the same, so the bits are too.
template <class BytesOf>
void sum_in_rank_order(Communicator& comm, Encoding& encoding, std::span<const SumChunk> chunks,
                       std::span<float> output, int divide_by, BytesOf&& bytes_of) {
  const auto ranks = static_cast<std::size_t>(comm.size());
  std::size_t largest = 0;
  for (const SumChunk& chunk : chunks) largest = std::max(largest, chunk.count);
  const auto scratch = comm.float_scratch(Scratch::decoded, largest);
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const SumChunk& chunk = chunks[c];
    if (chunk.count == 0) continue;
    const auto sum = output.subspan(chunk.at, chunk.count);
    const auto decoded = scratch.first(chunk.count);
    auto chunk_bytes = [&](std::size_t q) { return bytes_of(q, c); };
    encoding.decode(chunk_bytes(0), chunk.first, sum);
    for (std::size_t q = 1; q < ranks; ++q) {
      encoding.decode_add(chunk_bytes(q), chunk.first, sum, decoded);
    }
    divide_sums(sum, divide_by, ranks, decoded, [&](std::size_t q, std::span<float> out) {
      encoding.decode(chunk_bytes(q), chunk.first, out);
    });
  }
}

// The chunks of segment `segment` of a layout, placed in an output whose
// first element is `output_first`.
std::vector<SumChunk> segment_chunks(const SlotLayout& layout, std::size_t segment,
                                     std::size_t output_first) {
  const std::size_t k = layout.chunks_per_segment();
  std::vector<SumChunk> chunks(k);
  for (std::size_t c = 0; c < k; ++c) {
    const Range elements = layout.slot(segment * k + c).elements;
    chunks[c] = {elements.first, elements.first - output_first, elements.count};
  }
  return chunks;
}

void require_encoded(const Encoding& encoding, std::string_view operation) {
  if (encoding.identity_layout()) {
    throw InvalidArgument(std::string(operation) + ": '" + encoding.name() +
                          "' sums in transit; use the ring or halving-doubling body");
  }
}

// Where each chunk of this rank's own block lies in one source's region of
// the incoming buffer: offsets[c] for chunk c, slots at their capacity, and
// offsets[k] the region's whole size.
std::vector<std::size_t> own_chunk_offsets(const SlotLayout& layout, std::size_t me) {
  const std::size_t k = layout.chunks_per_segment();
  std::vector<std::size_t> offsets(k + 1, 0);
  for (std::size_t c = 0; c < k; ++c) {
    offsets[c + 1] = offsets[c] + layout.slot(me * k + c).capacity;
  }
  return offsets;
}

// The exchange of reduce-scatter by exchange: this rank sends the encoded
// chunks of block q (its slots in `work`) to rank q, and receives every other
// rank's chunks of its own block into `incoming`, each source's in a region
// of offsets.back() bytes, in rank order, chunk c at offsets[c]. Returns the
// bytes received per (source, chunk), index source·K + chunk (0 for this
// rank's own).
std::vector<std::size_t> send_blocks_to_owners(Communicator& comm, int tag,
                                               const SlotLayout& layout,
                                               std::span<const std::byte> work,
                                               std::span<std::byte> incoming,
                                               std::span<const std::size_t> offsets,
                                               Timeout timeout) {
  constexpr std::string_view op = "reduce-scatter by exchange";
  const auto n = static_cast<std::size_t>(comm.size());
  const auto me = static_cast<std::size_t>(comm.rank());
  const std::size_t k = layout.chunks_per_segment();
  Transport& transport = comm.transport();
  std::vector<RequestPtr> recvs(n * k), sends;
  for (std::size_t s = 1; s < n; ++s) {
    const std::size_t source = (me + n - s) % n;
    for (std::size_t c = 0; c < k; ++c) {
      const auto region =
          incoming.subspan(source * offsets[k] + offsets[c], offsets[c + 1] - offsets[c]);
      recvs[source * k + c] = transport.irecv(static_cast<int>(source), tag, region);
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
                                 std::span<float> output, Encoding& encoding,
                                 const CollectiveOptions& options, std::span<float> own,
                                 int divide_by) {
  require_encoded(encoding, "allreduce by allgather");
  const std::size_t d = input.size();
  if (d == 0) return;
  const auto n = static_cast<std::size_t>(comm.size());
  const auto me = static_cast<std::size_t>(comm.rank());
  // Segment q: rank q's encoding of the whole vector.
  const std::vector<Range> segments(n, Range{0, d});
  SlotLayout layout(segments, chunks_for(segments, options.chunk_bytes), encoding.granularity(),
                    encoding);
  auto work = comm.scratch(Scratch::work, layout.total_bytes());
  {
    PhaseScope timed(options.phases, &PhaseTimes::encode);
    encode_slots(encoding, layout, segment_slots(layout, me), input, 0, work, own);
  }
  const Timeout timeout = comm.timeout(options.timeout);
  run_schedule(comm, tag, layout, work, nullptr, SchedulePhases::allgather, options, timeout,
               "allreduce by allgather");
  PhaseScope timed(options.phases, &PhaseTimes::decode);
  // Every segment is the whole vector, cut into the same chunks.
  const std::size_t k = layout.chunks_per_segment();
  sum_in_rank_order(comm, encoding, segment_chunks(layout, me, 0), output, divide_by,
                    [&](std::size_t q, std::size_t c) {
                      const Slot& slot = layout.slot(q * k + c);
                      return std::span<const std::byte>(work.subspan(slot.offset, slot.size));
                    });
}

void reduce_scatter_by_exchange_body(Communicator& comm, int tag, std::span<const float> input,
                                     std::span<const Range> blocks, std::span<float> output,
                                     Encoding& encoding, const CollectiveOptions& options,
                                     std::span<float> own, int divide_by) {
  constexpr std::string_view op = "reduce-scatter by exchange";
  require_encoded(encoding, op);
  if (input.empty()) return;
  const auto n = static_cast<std::size_t>(comm.size());
  const auto me = static_cast<std::size_t>(comm.rank());
  const Range mine = blocks[me];
  SlotLayout layout(blocks, chunks_for(blocks, options.chunk_bytes), encoding.granularity(),
                    encoding);
  auto work = comm.scratch(Scratch::work, layout.total_bytes());
  {
    PhaseScope timed(options.phases, &PhaseTimes::encode);
    encode_slots(encoding, layout, all_slots(layout), input, 0, work, own);
  }
  const std::size_t k = layout.chunks_per_segment();
  const auto offsets = own_chunk_offsets(layout, me);
  auto incoming = comm.scratch(Scratch::staging, offsets[k] * n);
  const auto received = send_blocks_to_owners(comm, tag, layout, work, incoming, offsets,
                                              comm.timeout(options.timeout));

  PhaseScope timed(options.phases, &PhaseTimes::decode);
  // Chunk c of rank q's encoding: this rank's own in `work`, the others' at
  // their place in `incoming`.
  sum_in_rank_order(comm, encoding, segment_chunks(layout, me, mine.first), output, divide_by,
                    [&](std::size_t q, std::size_t c) {
                      if (q == me) {
                        const Slot& slot = layout.slot(me * k + c);
                        return std::span<const std::byte>(work.subspan(slot.offset, slot.size));
                      }
                      return std::span<const std::byte>(
                          incoming.subspan(q * offsets[k] + offsets[c], received[q * k + c]));
                    });
}

}  // namespace qccl
