#include "qccl/codecs/group_data_path.h"

#include <algorithm>
#include <cstring>
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

// An encoding the transport sums itself (fp32, fp16, the scaled fp32 mean).
void sum_natively(Communicator& comm, std::span<const float> input, std::span<float> output,
                  Encoding& encoding, std::span<float> own, Timeout timeout) {
  const NativeReduction native = *encoding.native_equivalent();
  if (encoding.identity_layout()) {  // the bytes are the fp32 values themselves
    if (input.data() != output.data()) std::memmove(output.data(), input.data(), input.size_bytes());
    if (!own.empty()) std::copy(input.begin(), input.end(), own.begin());
    comm.transport().allreduce(std::as_writable_bytes(output), native.type, native.op, timeout);
    return;
  }
  auto bytes = encode_whole(encoding, input, own);
  comm.transport().allreduce(bytes, native.type, native.op, timeout);
  encoding.decode(bytes, 0, output);
}

void sum_integers(GroupCollectives& group, std::span<const float> input, std::span<float> output,
                  Encoding& encoding, std::size_t width, std::span<float> own, Timeout timeout) {
  auto bytes = encode_whole(encoding, input, own);
  if (bytes.size() != width * input.size()) {
    throw Error(encoding.name() + ": encoded " + std::to_string(input.size()) + " elements into " +
                std::to_string(bytes.size()) + " bytes, not one " + std::to_string(width) +
                "-byte integer each (a bug in the codec: report it)");
  }
  group.sum_integers(bytes, width, timeout);
  encoding.decode(bytes, 0, output);
}

// Decodes every rank's encoding and adds them in rank order, in fp32, then
// divides each sum once (divide_sums: an element whose fp32 sum overflowed
// is summed again in double), as collectives/decode_sum.h does chunk by
// chunk on qccl's own transport.
// The same values in the same order on every rank: the same bits
// everywhere.
void sum_decoded(Encoding& encoding, std::span<const std::byte> all,
                 std::span<const std::size_t> sizes, std::span<float> output, int divide_by) {
  std::vector<float> scratch(output.size());
  std::vector<std::size_t> offsets(sizes.size(), 0);
  for (std::size_t q = 1; q < sizes.size(); ++q) offsets[q] = offsets[q - 1] + sizes[q - 1];
  const auto bytes_of = [&](std::size_t q) { return all.subspan(offsets[q], sizes[q]); };
  for (std::size_t q = 0; q < sizes.size(); ++q) {
    if (q == 0) {
      encoding.decode(bytes_of(q), 0, output);
    } else {
      encoding.decode_add(bytes_of(q), 0, output, scratch);
    }
  }
  divide_sums(output, divide_by, sizes.size(), scratch,
              [&](std::size_t q, std::span<float> out) { encoding.decode(bytes_of(q), 0, out); });
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

void group_allreduce(Communicator& comm, GroupCollectives& group, std::span<const float> input,
                     std::span<float> output, Encoding& encoding, bool gathered,
                     std::span<float> own, int divide_by, Timeout timeout,
                     const std::string& codec) {
  if (const std::string refusal = group_refusal(encoding, gathered, codec); !refusal.empty()) {
    throw InvalidArgument(refusal);
  }
  if (input.empty()) return;
  if (gathered) {
    const auto mine = encode_whole(encoding, input, own);
    std::vector<std::size_t> sizes;
    const auto all = gather_encodings(comm, mine, sizes, timeout);
    sum_decoded(encoding, all, sizes, output, divide_by);
  } else if (encoding.native_equivalent()) {
    sum_natively(comm, input, output, encoding, own, timeout);
  } else {  // summed integers (group_refusal let nothing else through)
    const auto width = dynamic_cast<SummedIntegers&>(encoding).integer_width();
    sum_integers(group, input, output, encoding, width, own, timeout);
  }
}

}  // namespace qccl
