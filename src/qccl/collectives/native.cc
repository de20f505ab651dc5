#include "qccl/collectives/native.h"

#include <algorithm>
#include <vector>

#include "qccl/common/errors.h"

namespace qccl {
namespace {

// Encodes `input` as one chunk (element `first` onward) into `work`;
// decodes this rank's contribution into `own` when asked.
std::size_t encode_whole(Encoding& encoding, std::span<const float> input, std::size_t first,
                         std::span<std::byte> work, std::span<float> own,
                         const CollectiveOptions& options) {
  PhaseScope timed(options.phases, &PhaseTimes::encode);
  if (input.empty()) return 0;
  const std::size_t bytes = encoding.encode(input, first, work);
  if (!own.empty()) encoding.decode_contribution(work.first(bytes), first, own);
  return bytes;
}

}  // namespace

void check_native(const Reduction& reduction, std::string_view operation) {
  const auto native = reduction.native_equivalent();
  const bool element_wise =
      native && reduction.max_encoded_bytes(1000) == 1000 * size_of(native->type);
  if (!element_wise) {
    throw InvalidArgument(std::string(operation) +
                          ": algorithm native runs only reductions MPI can do (fp32-sum, fp16); '" +
                          reduction.name() + "' runs on ring or halving-doubling");
  }
}

void native_allreduce(Communicator& comm, std::span<const float> input, std::span<float> output,
                      Reduction& reduction, const CollectiveOptions& options,
                      std::span<float> own) {
  const auto native = *reduction.native_equivalent();
  const Timeout timeout = comm.timeout(options.timeout);
  const bool many = comm.size() > 1;
  if (reduction.identity_layout()) {  // output holds the input already
    if (!own.empty()) std::copy(input.begin(), input.end(), own.begin());
    if (many) {
      comm.transport().allreduce(std::as_writable_bytes(output), native.type, native.op, timeout);
    }
    return;
  }
  if (input.empty()) return;
  auto work = comm.scratch(Scratch::work, reduction.max_encoded_bytes(input.size()));
  const std::size_t bytes = encode_whole(reduction, input, 0, work, own, options);
  if (many) comm.transport().allreduce(work.first(bytes), native.type, native.op, timeout);
  PhaseScope timed(options.phases, &PhaseTimes::decode);
  reduction.decode(work.first(bytes), 0, output);
}

void native_reduce_scatter(Communicator& comm, std::span<const float> input,
                           std::span<const Range> blocks, std::span<float> output,
                           Reduction& reduction, const CollectiveOptions& options,
                           std::span<float> own) {
  const auto native = *reduction.native_equivalent();
  const Timeout timeout = comm.timeout(options.timeout);
  const auto counts = range_counts(blocks);
  const Range mine = blocks[static_cast<std::size_t>(comm.rank())];
  if (reduction.identity_layout()) {
    if (!own.empty()) std::copy(input.begin(), input.end(), own.begin());
    comm.transport().reduce_scatter(std::as_bytes(input), std::as_writable_bytes(output), counts,
                                    native.type, native.op, timeout);
    return;
  }
  const std::size_t element = size_of(native.type);
  auto work = comm.scratch(Scratch::work, reduction.max_encoded_bytes(input.size()));
  auto block = comm.scratch(Scratch::staging, element * mine.count);
  encode_whole(reduction, input, 0, work, own, options);
  comm.transport().reduce_scatter(work.first(element * input.size()), block, counts, native.type,
                                  native.op, timeout);
  PhaseScope timed(options.phases, &PhaseTimes::decode);
  if (mine.count > 0) reduction.decode(block, mine.first, output);
}

void native_allgather(Communicator& comm, std::span<const float> shard,
                      std::span<const Range> shards, std::span<float> output, Encoding& encoding,
                      const CollectiveOptions& options, std::span<float> own) {
  const Timeout timeout = comm.timeout(options.timeout);
  const Range mine = shards[static_cast<std::size_t>(comm.rank())];
  if (encoding.identity_layout()) {
    if (!own.empty()) std::copy(shard.begin(), shard.end(), own.begin());
    comm.transport().allgather(std::as_bytes(shard), std::as_writable_bytes(output),
                               range_counts(shards, sizeof(float)), timeout);
    return;
  }
  const std::size_t element = size_of(encoding.native_equivalent()->type);
  auto encoded = comm.scratch(Scratch::staging, element * shard.size());
  auto all = comm.scratch(Scratch::work, element * output.size());
  encode_whole(encoding, shard, mine.first, encoded, own, options);
  comm.transport().allgather(encoded, all, range_counts(shards, element), timeout);
  PhaseScope timed(options.phases, &PhaseTimes::decode);
  for (const Range& r : shards) {
    if (r.count == 0) continue;
    encoding.decode(all.subspan(element * r.first, element * r.count), r.first,
                     output.subspan(r.first, r.count));
  }
}

}  // namespace qccl
