#include "qccl/codecs/group_data_path.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "qccl/collectives/decode_sum.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

// This rank's encoding of the whole vector, and (if wanted) what it stands
// for, Q(x), decoded before anything is summed.
std::vector<std::byte> encode_whole(Encoding& encoding, std::span<const float> input,
                                    std::span<float> own) {
  std::vector<std::byte> bytes(encoding.max_encoded_bytes(input.size()));
  bytes.resize(encoding.encode(input, 0, bytes));
  if (!own.empty()) encoding.decode_contribution(bytes, 0, own);
  return bytes;
}

// Decodes every rank's chunk of elements [first, first + output.size())
// (chunk_of(q), q in rank order) and adds them in fp32, then divides each
// sum once (divide_sums: an element whose fp32 sum overflowed is summed
// again in double), as collectives/decode_sum.h does chunk by chunk on
// qccl's own transport. The same values in the same order on every rank:
// the same bits everywhere.
template <class ChunkOf>
void sum_decoded(Encoding& encoding, std::size_t ranks, ChunkOf&& chunk_of, std::size_t first,
                 std::span<float> output, int divide_by) {
  // Written by decode_add before it is read, if at all (a device step's
  // staging never touches it): left uninitialised.
  const std::unique_ptr<float[]> scratch_memory(new float[output.size()]);
  const std::span<float> scratch(scratch_memory.get(), output.size());
  for (std::size_t q = 0; q < ranks; ++q) {
    if (q == 0) {
      encoding.decode(chunk_of(q), first, output);
    } else {
      encoding.decode_add(chunk_of(q), first, output, scratch);
    }
  }
  divide_sums(output, divide_by, ranks, scratch,
              [&](std::size_t q, std::span<float> out) { encoding.decode(chunk_of(q), first, out); });
}

// Rank q's bytes among every rank's, back to back in rank order.
std::vector<std::span<const std::byte>> split_by_sizes(std::span<const std::byte> all,
                                                       std::span<const std::size_t> sizes) {
  std::vector<std::span<const std::byte>> parts;
  for (std::size_t q = 0, offset = 0; q < sizes.size(); offset += sizes[q], ++q) {
    parts.push_back(all.subspan(offset, sizes[q]));
  }
  return parts;
}

// A reduce-scatter's message for a gathered encoding: a table of one
// uint64 size per block, then this rank's encoding of each block as one
// chunk (the blocks' elements' counters); `own` receives Q(input).
std::vector<std::byte> encode_blocks(Encoding& encoding, std::span<const float> input,
                                     std::span<const Range> blocks, std::span<float> own) {
  const std::size_t table = blocks.size() * sizeof(std::uint64_t);
  std::size_t bound = table;
  for (const Range& b : blocks) bound += encoding.max_encoded_bytes(b.count);
  std::vector<std::byte> message(bound);
  std::size_t at = table;
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const Range r = blocks[b];
    std::uint64_t size = 0;
    if (r.count > 0) {
      const auto chunk = std::span(message).subspan(at, encoding.max_encoded_bytes(r.count));
      size = encoding.encode(input.subspan(r.first, r.count), r.first, chunk);
      if (!own.empty()) encoding.decode_contribution(chunk.first(size), r.first, own.subspan(r.first, r.count));
    }
    std::memcpy(message.data() + b * sizeof size, &size, sizeof size);
    at += size;
  }
  message.resize(at);
  return message;
}

// Block `block`'s chunk in a message of encode_blocks. The whole table is
// checked against the message's length, whichever block is wanted, so a
// corrupt message is refused on every rank that receives it.
std::span<const std::byte> block_chunk(std::span<const std::byte> message, std::size_t blocks,
                                       std::size_t block, const std::string& codec) {
  const std::size_t table = blocks * sizeof(std::uint64_t);
  const auto corrupt = [&] {
    return CommError(codec + ": a rank's reduce-scatter message through the process group has " +
                     std::to_string(message.size()) + " bytes, which are not the " +
                     std::to_string(blocks) + " chunks its table lists (corrupt message?)");
  };
  if (message.size() < table) throw corrupt();
  std::size_t at = table, wanted = 0, wanted_size = 0;
  for (std::size_t b = 0; b < blocks; ++b) {
    std::uint64_t size = 0;
    std::memcpy(&size, message.data() + b * sizeof size, sizeof size);
    if (size > message.size() - at) throw corrupt();
    if (b == block) {
      wanted = at;
      wanted_size = size;
    }
    at += size;
  }
  if (at != message.size()) throw corrupt();
  return message.subspan(wanted, wanted_size);
}

// The whole vector's encoding summed over the group (native or integers).
std::vector<std::byte> summed_whole(Communicator& comm, GroupCollectives& group,
                                    const GroupAggregation& aggregation, Encoding& encoding,
                                    std::span<const float> input, std::span<float> own,
                                    Timeout timeout) {
  auto bytes = encode_whole(encoding, input, own);
  if (bytes.size() != aggregation.element_bytes * input.size()) {
    throw Error(encoding.name() + ": encoded " + std::to_string(input.size()) + " elements into " +
                std::to_string(bytes.size()) + " bytes, not " +
                std::to_string(aggregation.element_bytes) + " each (a bug in the codec: report it)");
  }
  if (aggregation.kind == GroupAggregation::Kind::native) {
    comm.transport().allreduce(bytes, aggregation.native.type, aggregation.native.op, timeout);
  } else {
    group.sum_integers(bytes, aggregation.element_bytes, timeout);
  }
  return bytes;
}

}  // namespace

std::vector<std::byte> gather_encodings(Communicator& comm, std::span<const std::byte> mine,
                                        std::vector<std::size_t>& sizes, Timeout timeout) {
  const auto n = static_cast<std::size_t>(comm.size());
  std::vector<std::int64_t> table(n, 0);
  table[static_cast<std::size_t>(comm.rank())] = static_cast<std::int64_t>(mine.size());
  comm.transport().allreduce(std::as_writable_bytes(std::span(table)), DataType::i64,
                             ReduceOp::sum, timeout);
  sizes.assign(table.begin(), table.end());
  std::size_t total = 0;
  for (const std::size_t s : sizes) total += s;
  std::vector<std::byte> all(total);
  comm.transport().allgather(mine, all, sizes, timeout);
  return all;
}

GroupCollectives* group_collectives(Communicator& comm) {
  return dynamic_cast<GroupCollectives*>(&comm.transport());
}

std::string group_refusal(Encoding& encoding, bool gathered, const std::string& codec) {
  if (gathered || encoding.native_equivalent() ||
      dynamic_cast<SummedIntegers*>(&encoding) != nullptr) {
    return {};
  }
  return "'" + codec + "' combines its encodings ('" + encoding.name() +
         "') hop by hop in qccl's own ring, which a process group cannot run: use qccl's MPI "
         "mode (launch with mpirun and call qccl.init() there), or a codec whose encodings add "
         "up (global-qsgd with linear dithering, intsgd) or are gathered (qsgd, topk, ...)";
}

GroupAggregation group_aggregation(Encoding& encoding, bool gathered, const std::string& codec) {
  if (const std::string refusal = group_refusal(encoding, gathered, codec); !refusal.empty()) {
    throw InvalidArgument(refusal);
  }
  GroupAggregation aggregation;
  if (gathered) return aggregation;
  if (const auto native = encoding.native_equivalent()) {
    aggregation.kind = GroupAggregation::Kind::native;
    aggregation.native = *native;
    aggregation.element_bytes = size_of(native->type);
  } else {
    aggregation.kind = GroupAggregation::Kind::integers;
    aggregation.element_bytes = dynamic_cast<SummedIntegers&>(encoding).integer_width();
  }
  return aggregation;
}

void group_allreduce(Communicator& comm, GroupCollectives& group,
                     const GroupAggregation& aggregation, Encoding& encoding,
                     std::span<const float> input, std::span<float> output, std::span<float> own,
                     int divide_by, Timeout timeout) {
  if (input.empty()) return;
  if (aggregation.kind == GroupAggregation::Kind::gathered) {
    const auto mine = encode_whole(encoding, input, own);
    std::vector<std::size_t> sizes;
    const auto all = gather_encodings(comm, mine, sizes, timeout);
    const auto chunks = split_by_sizes(all, sizes);
    sum_decoded(encoding, chunks.size(), [&](std::size_t q) { return chunks[q]; }, 0, output, divide_by);
    return;
  }
  if (encoding.identity_layout()) {  // fp32: the bytes are the values themselves
    if (input.data() != output.data()) std::memmove(output.data(), input.data(), input.size_bytes());
    if (!own.empty()) std::copy(input.begin(), input.end(), own.begin());
    comm.transport().allreduce(std::as_writable_bytes(output), aggregation.native.type,
                               aggregation.native.op, timeout);
    return;
  }
  const auto sums = summed_whole(comm, group, aggregation, encoding, input, own, timeout);
  encoding.decode(sums, 0, output);
}

void group_reduce_scatter(Communicator& comm, GroupCollectives& group,
                          const GroupAggregation& aggregation, Encoding& encoding,
                          std::span<const float> input, std::span<const Range> blocks,
                          std::span<float> output, std::span<float> own, int divide_by,
                          Timeout timeout) {
  const Range mine = blocks[static_cast<std::size_t>(comm.rank())];
  if (aggregation.kind != GroupAggregation::Kind::gathered) {
    if (input.empty()) return;
    const auto sums = summed_whole(comm, group, aggregation, encoding, input, own, timeout);
    if (mine.count > 0) {
      encoding.decode(std::span(sums).subspan(aggregation.element_bytes * mine.first,
                                              aggregation.element_bytes * mine.count),
                      mine.first, output);
    }
    return;
  }
  const auto message = encode_blocks(encoding, input, blocks, own);
  std::vector<std::size_t> sizes;
  const auto all = gather_encodings(comm, message, sizes, timeout);
  const auto messages = split_by_sizes(all, sizes);
  const auto block = static_cast<std::size_t>(comm.rank());
  std::vector<std::span<const std::byte>> chunks;
  for (const auto& m : messages) chunks.push_back(block_chunk(m, blocks.size(), block, encoding.name()));
  if (mine.count == 0) return;
  sum_decoded(encoding, chunks.size(), [&](std::size_t q) { return chunks[q]; }, mine.first, output,
              divide_by);
}

void group_allgather(Communicator& comm, Encoding& encoding, std::span<const float> shard,
                     std::span<const Range> shards, std::span<float> output,
                     std::span<float> own, Timeout timeout) {
  const Range mine = shards[static_cast<std::size_t>(comm.rank())];
  std::vector<std::byte> bytes(shard.empty() ? 0 : encoding.max_encoded_bytes(shard.size()));
  if (!shard.empty()) {
    bytes.resize(encoding.encode(shard, mine.first, bytes));
    if (!own.empty()) encoding.decode_contribution(bytes, mine.first, own);
  }
  std::vector<std::size_t> sizes;
  const auto all = gather_encodings(comm, bytes, sizes, timeout);
  const auto chunks = split_by_sizes(all, sizes);
  for (std::size_t q = 0; q < chunks.size(); ++q) {
    const Range r = shards[q];
    if (r.count > 0) encoding.decode(chunks[q], r.first, output.subspan(r.first, r.count));
  }
}

void group_move_data(Communicator& comm, GroupCollectives& group, CodecOperation kind,
                     Encoding& encoding, bool gathered, const std::string& codec, Encoding& moved,
                     std::span<const float> input, std::span<const Range> pieces,
                     std::span<float> output, std::span<float> own, int divide_by,
                     Timeout timeout) {
  if (kind == CodecOperation::allgather) {
    group_allgather(comm, moved, input, pieces, output, own, timeout);
    return;
  }
  const GroupAggregation aggregation = group_aggregation(encoding, gathered, codec);
  if (kind == CodecOperation::allreduce_mean) {
    group_allreduce(comm, group, aggregation, moved, input, output, own, divide_by, timeout);
  } else {
    group_reduce_scatter(comm, group, aggregation, moved, input, pieces, output, own, divide_by,
                         timeout);
  }
}

}  // namespace qccl
