// A codec's data moved by a caller's process group (PyTorch's
// torch.distributed, for instance) instead of qccl's own transport: the
// group offers whole-vector collectives only — a SUM allreduce of numbers
// and an allgather of bytes — so nothing is combined hop by hop.
//
// Which encodings such a group can carry (Global-QSGD §4.3's point: its
// integer encodings add up, so a plain integer SUM allreduce aggregates
// them):
// - encodings the transport sums natively (fp32, fp16, the exact fp32 mean):
//   one SUM allreduce of their values;
// - integer encodings whose in-transit reduction is exact integer addition
//   (Global-QSGD's linear dithering, IntSGD's wire integers): one integer
//   SUM allreduce; the headroom the codec proves for n ranks (Global-QSGD
//   §4.3: n·s fits the wire; IntSGD §4.2: per-rank clip c with n·c in
//   range) keeps that sum exact;
// - encodings that are decoded before they are added (QSGD, min-max, Top-k,
//   the signs): an allgather of every rank's encoded bytes, each decoded and
//   added in rank order, so every rank gets the same bits.
// Reductions of other kinds (exponential dithering's C_nat, averaging 4-bit
// levels) combine partial results hop by hop and need qccl's own ring: the
// group path refuses them, naming the MPI mode.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "qccl/codecs/codec.h"
#include "qccl/collectives/communicator.h"
#include "qccl/collectives/encoding.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/options.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

// A transport that is a process group: besides the Transport interface it
// sums integers of widths the Transport's DataType lacks.
class GroupCollectives {
 public:
  // data holds integers of `width` bytes (1, 4 or 8), replaced on every rank
  // by their element-wise sum over the group's ranks.
  virtual void sum_integers(std::span<std::byte> data, std::size_t width, Timeout timeout) = 0;

 protected:
  ~GroupCollectives() = default;
};

// An encoding whose chunks are integers of one width, one per element, with
// no header, whose in-transit reduction is their exact sum (with the
// codec's headroom for n ranks).
class SummedIntegers {
 public:
  virtual std::size_t integer_width() const = 0;

 protected:
  ~SummedIntegers() = default;
};

// The transport's group collectives, or null when it is not a group.
GroupCollectives* group_collectives(Communicator& comm);

// Empty when a group can carry this encoding, else why not and what to do
// (the MPI mode). `gathered`: the codec decodes every rank's encoding before
// adding (Aggregation::allgather_decode). `codec` names the codec.
std::string group_refusal(Encoding& encoding, bool gathered, const std::string& codec);

// Every rank's encoded bytes in rank order through the group (`mine` this
// rank's; `sizes` receives each rank's size): one small SUM allreduce of
// the sizes, then the group's allgather of bytes.
std::vector<std::byte> gather_encodings(Communicator& comm, std::span<const std::byte> mine,
                                        std::vector<std::size_t>& sizes, Timeout timeout);

// How the group aggregates an encoding (see above): by its native SUM
// allreduce, by the group's integer SUM, each element's code
// `element_bytes` long with no header (so elements [first, first + count)
// of a summed vector are its bytes from element_bytes·first on), or by an
// allgather of every rank's bytes, decoded and added in rank order.
struct GroupAggregation {
  enum class Kind { native, integers, gathered };
  Kind kind = Kind::gathered;
  std::size_t element_bytes = 0;  // native and integers
  NativeReduction native{};       // native
};
// The group's way for this encoding; InvalidArgument with group_refusal's
// message when it has none.
GroupAggregation group_aggregation(Encoding& encoding, bool gathered, const std::string& codec);

// The reduce-scatter mean's data movement through the group, which has no
// reduce-scatter of its own (PyTorch's gloo backend has none): a summed
// encoding is summed whole, as by the allreduce, and this rank decodes its
// block (`output`, blocks[rank]) from the sum; a gathered one sends each
// rank's encoding of every block, one chunk a block behind a table of
// their sizes, through the group's allgather, and this rank decodes and
// adds every rank's chunk of its block in rank order (then divides by
// `divide_by`, 1 where the codec scales itself). So a rank receives what
// the group's allreduce of the whole vector moves (a gloo ring: about
// 2(n−1)/n of the encoding), or every other rank's whole encoding ((n−1)
// of it), where qccl's own reduce-scatter receives (n−1)/n: about 2× and
// n× the bytes. `encoding` encodes and
// decodes the chunks (a device step's staging: its own chunks, with the
// bytes of `aggregation`'s encoding); `own` as in group_allreduce.
void group_reduce_scatter(Communicator& comm, GroupCollectives& group,
                          const GroupAggregation& aggregation, Encoding& encoding,
                          std::span<const float> input, std::span<const Range> blocks,
                          std::span<float> output, std::span<float> own, int divide_by,
                          Timeout timeout);

// The allgather's data movement through the group: this rank encodes its
// shard (elements shards[rank] of the output: their counters) as one
// chunk, every rank's chunk travels by the group's allgather of bytes
// (gather_encodings), and every rank decodes every shard into its place.
// Any encoding can travel so: nothing is combined. `own` (if not empty,
// as long as the shard) receives Q(shard).
void group_allgather(Communicator& comm, Encoding& encoding, std::span<const float> shard,
                     std::span<const Range> shards, std::span<float> output,
                     std::span<float> own, Timeout timeout);

// The allreduce mean's data movement through the group (`aggregation`:
// how): `output` receives the sum over ranks of the decoded encodings
// divided by `divide_by` (1 where the codec scales the sum itself), `own`
// (if not empty) this rank's decoded contribution Q(x). `encoding`
// encodes and decodes, as in group_reduce_scatter.
void group_allreduce(Communicator& comm, GroupCollectives& group,
                     const GroupAggregation& aggregation, Encoding& encoding,
                     std::span<const float> input, std::span<float> output, std::span<float> own,
                     int divide_by, Timeout timeout);

// A codec step's data movement through the group for `kind`: the
// allreduce, reduce-scatter or allgather above. `encoding` is the step's,
// which says how the group combines its chunks (group_aggregation, which
// refuses what the group cannot carry; not asked for an allgather, which
// combines nothing; `gathered`: the codec decodes every rank's encoding
// before adding; `codec` names it); `moved` encodes and decodes the chunks
// (`encoding` itself on host data, a device step's staging on device
// data). `pieces`: the reduce-scatter's blocks or the allgather's shards.
void group_move_data(Communicator& comm, GroupCollectives& group, CodecOperation kind,
                     Encoding& encoding, bool gathered, const std::string& codec, Encoding& moved,
                     std::span<const float> input, std::span<const Range> pieces,
                     std::span<float> output, std::span<float> own, int divide_by,
                     Timeout timeout);

}  // namespace qccl
QCCL_API_END
