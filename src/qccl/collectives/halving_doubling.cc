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

}  // namespace

void run_halving_doubling(Communicator& comm, int tag, SlotLayout& layout,
                          std::span<std::byte> work, Reduction* reduction,
                          HalvingDoublingPhases phases, const CollectiveOptions& options,
                          Timeout timeout, std::string_view op) {
  const int n = comm.size();
  const int r = comm.rank();
  if (n == 1) return;
  const bool reduces = phases != HalvingDoublingPhases::allgather;
  const bool gathers = phases != HalvingDoublingPhases::reduce_scatter;
  if (reduces && reduction == nullptr) {
    throw InvalidArgument(std::string(op) + ": halving needs a reduction");
  }
  const int p = static_cast<int>(halving_doubling_blocks(n));
  const int m = n - p;
  const std::size_t k = layout.chunks_per_segment();
  const std::size_t all = layout.slot_count();
  const auto starts = block_starts(phases, n, p, k);
  auto real_rank = [&](int v) { return v < m ? 2 * v + 1 : v + m; };
  auto blocks = [&](int lo, int hi) {
    const auto first = starts[static_cast<std::size_t>(lo)];
    return SlotTransfer{-1, first, starts[static_cast<std::size_t>(hi)] - first};
  };
  auto segment = [&](int rank) {
    return SlotTransfer{-1, static_cast<std::size_t>(rank) * k, k};
  };
  auto to = [](int peer, SlotTransfer t) {
    t.peer = peer;
    return t;
  };
  auto exchange = [&](const SlotTransfer& out, const SlotTransfer& in, Reduction* reduce, int hop) {
    exchange_slots(comm, tag, layout, work, out, in, reduce, hop, options, timeout, op);
  };
  const SlotTransfer whole{-1, 0, all};
  int hop = 0;

  // 1. Fold, and 4. for the even side: it takes no part in between.
  if (r < 2 * m && r % 2 == 0) {
    if (phases == HalvingDoublingPhases::allgather) {
      exchange(to(r + 1, segment(r)), {}, nullptr, 0);
    } else {
      exchange(to(r + 1, whole), {}, nullptr, 0);
    }
    const SlotTransfer result =
        phases == HalvingDoublingPhases::reduce_scatter ? segment(r) : whole;
    exchange({}, to(r + 1, result), nullptr, 0);
    return;
  }
  if (r < 2 * m) {
    if (phases == HalvingDoublingPhases::allgather) {
      exchange({}, to(r - 1, segment(r - 1)), nullptr, 0);
    } else {
      exchange({}, to(r - 1, whole), reduction, hop++);
    }
  }
  const int v = r < 2 * m ? r / 2 : r - m;

  // 2. Recursive halving.
  int lo = 0, hi = p;
  if (reduces) {
    for (int mask = p / 2; mask >= 1; mask /= 2) {
      const int partner = real_rank(v ^ mask);
      const int mid = (lo + hi) / 2;
      const bool upper = (v & mask) != 0;
      const auto keep = upper ? blocks(mid, hi) : blocks(lo, mid);
      const auto give = upper ? blocks(lo, mid) : blocks(mid, hi);
      exchange(to(partner, give), to(partner, keep), reduction, hop++);
      if (upper) lo = mid; else hi = mid;
    }
  } else {
    lo = v;
    hi = v + 1;
  }

  // 3. Recursive doubling.
  if (gathers) {
    for (int mask = 1; mask < p; mask *= 2) {
      const int partner = real_rank(v ^ mask);
      const int length = hi - lo;
      const int other_lo = (v & mask) ? lo - length : hi;
      exchange(to(partner, blocks(lo, hi)), to(partner, blocks(other_lo, other_lo + length)),
               nullptr, 0);
      lo = std::min(lo, other_lo);
      hi = lo + 2 * length;
    }
  }

  // 4. Unfold (odd side).
  if (r < 2 * m) {
    exchange(to(r - 1, phases == HalvingDoublingPhases::reduce_scatter ? segment(r - 1) : whole), {},
             nullptr, 0);
  }
}

}  // namespace qccl
