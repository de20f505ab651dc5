#include "qccl/collectives/allgather.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "qccl/collectives/layout.h"
#include "qccl/collectives/ring.h"
#include "qccl/collectives/validate.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

std::int64_t counts_hash(std::span<const std::size_t> counts) {
  std::uint64_t h = 1469598103934665603ULL;
  for (std::size_t c : counts) h = (h ^ c) * 1099511628211ULL;
  return static_cast<std::int64_t>(h >> 2);
}

// The ring allgather over byte segments; the shared body of every variant.
void ring_allgather_bytes(Communicator& comm, std::span<const std::byte> input,
                          std::span<const std::size_t> byte_counts, std::span<std::byte> output,
                          const CollectiveOptions& options, Fingerprint fingerprint) {
  constexpr std::string_view op = "allgather";
  validate_options(options, op);
  require_ring(options, op);
  const auto n = static_cast<std::size_t>(comm.size());
  const auto me = static_cast<std::size_t>(comm.rank());
  if (byte_counts.size() != n) {
    throw InvalidArgument("allgather: counts has " + std::to_string(byte_counts.size()) +
                          " entries for " + std::to_string(n) + " ranks");
  }
  if (input.size() != byte_counts[me]) {
    throw InvalidArgument("allgather: rank " + std::to_string(me) + " contributes " +
                          std::to_string(input.size()) + " bytes but counts says " +
                          std::to_string(byte_counts[me]));
  }
  const std::size_t total = std::accumulate(byte_counts.begin(), byte_counts.end(), std::size_t{0});
  if (output.size() != total) {
    throw InvalidArgument("allgather: output has " + std::to_string(output.size()) +
                          " bytes but the contributions total " + std::to_string(total));
  }
  const Timeout timeout = comm.timeout(options.timeout);
  comm.run(fingerprint, timeout, [&](int tag) {
    const std::size_t largest = *std::max_element(byte_counts.begin(), byte_counts.end());
    const std::size_t chunks = std::max<std::size_t>(1, (largest + options.chunk_bytes - 1) / options.chunk_bytes);
    SlotLayout layout(byte_counts, chunks);
    const std::size_t my_offset = layout.slot(me, 0).offset;
    std::byte* destination = output.data() + my_offset;
    if (!input.empty() && input.data() != destination) {
      std::memmove(destination, input.data(), input.size());
    }
    if (total > 0) {
      run_ring(comm, tag, layout, output, nullptr, RingPhases::allgather, options, timeout,
               "ring allgather");
    }
  });
}

}  // namespace

void allgather(Communicator& comm, std::span<const float> input, std::span<float> output,
               const CollectiveOptions& options) {
  const std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()), input.size_bytes());
  Fingerprint fingerprint("allgather");
  fingerprint.add("element count", static_cast<std::int64_t>(input.size()));
  ring_allgather_bytes(comm, std::as_bytes(input), counts, std::as_writable_bytes(output), options,
                       fingerprint);
}

void allgatherv(Communicator& comm, std::span<const float> input,
                std::span<const std::size_t> counts, std::span<float> output,
                const CollectiveOptions& options) {
  std::vector<std::size_t> bytes(counts.begin(), counts.end());
  for (auto& b : bytes) b *= sizeof(float);
  Fingerprint fingerprint("allgatherv");
  fingerprint.add("counts", counts_hash(counts));
  ring_allgather_bytes(comm, std::as_bytes(input), bytes, std::as_writable_bytes(output), options,
                       fingerprint);
}

void allgatherv_bytes(Communicator& comm, std::span<const std::byte> input,
                      std::span<const std::size_t> byte_counts, std::span<std::byte> output,
                      const CollectiveOptions& options) {
  Fingerprint fingerprint("allgatherv bytes");
  fingerprint.add("counts", counts_hash(byte_counts));
  ring_allgather_bytes(comm, input, byte_counts, output, options, fingerprint);
}

std::vector<std::size_t> allgather_counts(Communicator& comm, std::size_t count,
                                          const CollectiveOptions& options) {
  validate_options(options, "allgather counts");
  const auto n = static_cast<std::size_t>(comm.size());
  std::vector<std::int64_t> table(n, 0);
  table[static_cast<std::size_t>(comm.rank())] = static_cast<std::int64_t>(count);
  const Timeout timeout = comm.timeout(options.timeout);
  comm.run(Fingerprint("allgather counts"), timeout, [&](int) {
    allreduce_values<std::int64_t>(comm.transport(), table, ReduceOp::sum, timeout);
  });
  return {table.begin(), table.end()};
}

}  // namespace qccl
