// Recursive halving and doubling (Global-QSGD §7's tree: "first recursively
// aggregates the gradients, then does a recursive-doubling Allgather", depth
// 2·log2 n), for any rank count by folding.
//
// Let p = the largest power of two <= n and m = n - p. Ranks 0..2m-1 pair
// up (2i, 2i+1); the p survivors — odd ranks below 2m, and every rank from 2m
// on — get virtual ranks v = 0..p-1, and survivor v stands for the ranks
// {2v, 2v+1} (v < m) or {v + m}. Survivor v's block is the segments of the
// ranks it stands for (allreduce: segment v of p equal ones); the blocks of
// v = 0..p-1 are contiguous and in order.
// 1. Fold: each even rank below 2m sends its vector to the odd rank above it,
//    which reduces it in (allgather: sends only its own segment, stored).
// 2. Halving (allreduce, reduce-scatter): in round j (mask = p/2, ..., 1) a
//    survivor exchanges with the survivor whose virtual rank differs in bit
//    `mask`, keeps the half of its block range that bit selects, sends the
//    other half, and reduces the received half into its kept half. It ends
//    owning block v, reduced over all n inputs.
// 3. Doubling (allreduce, allgather): the reverse rounds exchange owned
//    ranges, stored in place, until every survivor holds every block.
// 4. Unfold: each odd rank below 2m sends the even rank below it the result
//    (reduce-scatter: only that rank's segment).
// Each chunk is reduced by exactly one rank per round and its bytes are then
// copied onward, so all ranks end with identical bytes.
#include "qccl/collectives/halving_doubling.h"

#include <bit>
#include <vector>

#include "qccl/collectives/exchange.h"
#include "qccl/common/errors.h"

namespace qccl {

std::size_t halving_doubling_blocks(int ranks) {
  return std::bit_floor(static_cast<unsigned>(std::max(ranks, 1)));
}

namespace {

// Where each survivor's block starts, in slots: p + 1 entries.
std::vector<std::size_t> block_starts(HalvingDoublingPhases phases, int n, int p, std::size_t k) {
  const int m = n - p;
  std::vector<std::size_t> starts(static_cast<std::size_t>(p) + 1);
  for (int v = 0; v <= p; ++v) {
    const int first_segment = phases == HalvingDoublingPhases::allreduce
                                  ? v
                                  : (v == p ? n : (v < m ? 2 * v : v + m));
    starts[static_cast<std::size_t>(v)] = static_cast<std::size_t>(first_segment) * k;
  }
  return starts;
}

// One run of the schedule on this rank (see halving_doubling.h): the fold
// of the ranks beyond the largest power of two p, recursive halving and
// doubling among p survivors, and the unfold.
class HalvingDoublingPass {
 public:
  HalvingDoublingPass(Communicator& comm, int tag, SlotLayout& layout, std::span<std::byte> work,
                      Reduction* reduction, HalvingDoublingPhases phases,
                      const CollectiveOptions& options, Timeout timeout, std::string_view op)
      : comm_(comm), tag_(tag), layout_(layout), work_(work), reduction_(reduction),
        phases_(phases), options_(options), timeout_(timeout), op_(op), n_(comm.size()),
        r_(comm.rank()), p_(static_cast<int>(halving_doubling_blocks(n_))), m_(n_ - p_),
        k_(layout.chunks_per_segment()), starts_(block_starts(phases, n_, p_, k_)) {}

  void run() {
    // 1. Fold, and 4. for the even side: it takes no part in between.
    if (r_ < 2 * m_ && r_ % 2 == 0) {
      fold_and_unfold_even();
      return;
    }
    if (r_ < 2 * m_) fold_odd();
    const int v = r_ < 2 * m_ ? r_ / 2 : r_ - m_;
    int lo = v, hi = v + 1;
    if (phases_ != HalvingDoublingPhases::allgather) halve(v, lo, hi);
    if (phases_ != HalvingDoublingPhases::reduce_scatter) double_up(v, lo, hi);
    // 4. Unfold (odd side).
    if (r_ < 2 * m_) {
      exchange(to(r_ - 1, phases_ == HalvingDoublingPhases::reduce_scatter ? segment(r_ - 1) : whole()),
               {}, nullptr, 0);
    }
  }

 private:
  void fold_and_unfold_even() {
    if (phases_ == HalvingDoublingPhases::allgather) {
      exchange(to(r_ + 1, segment(r_)), {}, nullptr, 0);
    } else {
      exchange(to(r_ + 1, whole()), {}, nullptr, 0);
    }
    const SlotTransfer result =
        phases_ == HalvingDoublingPhases::reduce_scatter ? segment(r_) : whole();
    exchange({}, to(r_ + 1, result), nullptr, 0);
  }

  void fold_odd() {
    if (phases_ == HalvingDoublingPhases::allgather) {
      exchange({}, to(r_ - 1, segment(r_ - 1)), nullptr, 0);
    } else {
      exchange({}, to(r_ - 1, whole()), reduction_, hop_++);
    }
  }

  // 2. Recursive halving: survivor v ends owning the reduced blocks [lo, hi).
  void halve(int v, int& lo, int& hi) {
    lo = 0;
    hi = p_;
    for (int mask = p_ / 2; mask >= 1; mask /= 2) {
      const int partner = real_rank(v ^ mask);
      const int mid = (lo + hi) / 2;
      const bool upper = (v & mask) != 0;
      const auto keep = upper ? blocks(mid, hi) : blocks(lo, mid);
      const auto give = upper ? blocks(lo, mid) : blocks(mid, hi);
      exchange(to(partner, give), to(partner, keep), reduction_, hop_++);
      if (upper) lo = mid; else hi = mid;
    }
  }

  // 3. Recursive doubling: from blocks [lo, hi) to all of them.
  void double_up(int v, int lo, int hi) {
    for (int mask = 1; mask < p_; mask *= 2) {
      const int partner = real_rank(v ^ mask);
      const int length = hi - lo;
      const int other_lo = (v & mask) ? lo - length : hi;
      exchange(to(partner, blocks(lo, hi)), to(partner, blocks(other_lo, other_lo + length)),
               nullptr, 0);
      lo = std::min(lo, other_lo);
      hi = lo + 2 * length;
    }
  }

  int real_rank(int v) const { return v < m_ ? 2 * v + 1 : v + m_; }
  SlotTransfer blocks(int lo, int hi) const {
    const auto first = starts_[static_cast<std::size_t>(lo)];
    return SlotTransfer{-1, first, starts_[static_cast<std::size_t>(hi)] - first};
  }
  SlotTransfer segment(int rank) const {
    return SlotTransfer{-1, static_cast<std::size_t>(rank) * k_, k_};
  }
  SlotTransfer whole() const { return SlotTransfer{-1, 0, layout_.slot_count()}; }
  static SlotTransfer to(int peer, SlotTransfer t) {
    t.peer = peer;
    return t;
  }
  void exchange(const SlotTransfer& out, const SlotTransfer& in, Reduction* reduce, int hop) {
    exchange_slots(comm_, tag_, layout_, work_, out, in, reduce, hop, options_, timeout_, op_);
  }

  Communicator& comm_;
  int tag_;
  SlotLayout& layout_;
  std::span<std::byte> work_;
  Reduction* reduction_;
  HalvingDoublingPhases phases_;
  const CollectiveOptions& options_;
  Timeout timeout_;
  std::string_view op_;
  int n_, r_, p_, m_;
  std::size_t k_;
  std::vector<std::size_t> starts_;
  int hop_ = 0;
};

}  // namespace

void run_halving_doubling(Communicator& comm, int tag, SlotLayout& layout,
                          std::span<std::byte> work, Reduction* reduction,
                          HalvingDoublingPhases phases, const CollectiveOptions& options,
                          Timeout timeout, std::string_view op) {
  if (comm.size() == 1) return;
  if (phases != HalvingDoublingPhases::allgather && reduction == nullptr) {
    throw InvalidArgument(std::string(op) + ": halving needs a reduction");
  }
  HalvingDoublingPass(comm, tag, layout, work, reduction, phases, options, timeout, op).run();
}

}  // namespace qccl
