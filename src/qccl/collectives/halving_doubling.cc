// Tree allreduce (Global-QSGD §7: "first recursively aggregates the
// gradients, then does a recursive-doubling Allgather", depth 2·log2 n),
// extended to any rank count by folding.
//
// Let p = the largest power of two <= n and m = n - p.
// 1. Fold: among ranks 0..2m-1, each even rank sends its whole vector to the
//    odd rank above it, which reduces it in. The p survivors (odd ranks below
//    2m, and every rank from 2m on) get virtual ranks 0..p-1.
// 2. Recursive halving: in round j (mask = p/2, p/4, ..., 1) a survivor
//    exchanges with the survivor whose virtual rank differs in bit `mask`,
//    keeps the half of its current block range that bit selects, sends the
//    other half, and reduces the received half into its kept half. It ends
//    owning block v (its virtual rank), reduced over all n inputs.
// 3. Recursive doubling: the reverse rounds exchange owned ranges, stored
//    in place, until every survivor holds all p blocks.
// 4. Unfold: each odd rank below 2m sends the result to the even rank below.
// Each chunk is reduced by exactly one rank per round and its bytes are then
// copied onward, so all ranks end with identical bytes.
#include "qccl/collectives/halving_doubling.h"

#include <bit>

#include "qccl/collectives/exchange.h"

namespace qccl {

std::size_t halving_doubling_blocks(int ranks) {
  return std::bit_floor(static_cast<unsigned>(std::max(ranks, 1)));
}

void run_halving_doubling(Communicator& comm, int tag, SlotLayout& layout, std::span<std::byte> work,
              Reduction& reduction, const CollectiveOptions& options, Timeout timeout) {
  const int n = comm.size();
  const int r = comm.rank();
  if (n == 1) return;
  const int p = static_cast<int>(halving_doubling_blocks(n));
  const int m = n - p;
  const std::size_t k = layout.chunks_per_segment();
  const std::size_t all = layout.slot_count();
  constexpr std::string_view op = "halving-doubling allreduce";
  auto real_rank = [&](int v) { return v < m ? 2 * v + 1 : v + m; };
  auto blocks = [&](int lo, int hi) {
    return std::pair{static_cast<std::size_t>(lo) * k, static_cast<std::size_t>(hi - lo) * k};
  };
  int hop = 0;

  // 1. Fold.
  if (r < 2 * m) {
    if (r % 2 == 0) {
      exchange_slots(comm, tag, layout, work, {r + 1, 0, all}, {}, nullptr, 0, options, timeout, op);
      // 4. (even side) Receive the final result.
      exchange_slots(comm, tag, layout, work, {}, {r + 1, 0, all}, nullptr, 0, options, timeout, op);
      return;
    }
    exchange_slots(comm, tag, layout, work, {}, {r - 1, 0, all}, &reduction, hop++, options,
                   timeout, op);
  }
  const int v = r < 2 * m ? r / 2 : r - m;

  // 2. Recursive halving.
  int lo = 0, hi = p;
  for (int mask = p / 2; mask >= 1; mask /= 2) {
    const int partner = real_rank(v ^ mask);
    const int mid = (lo + hi) / 2;
    const bool upper = (v & mask) != 0;
    const auto [keep_first, keep_count] = upper ? blocks(mid, hi) : blocks(lo, mid);
    const auto [give_first, give_count] = upper ? blocks(lo, mid) : blocks(mid, hi);
    exchange_slots(comm, tag, layout, work, {partner, give_first, give_count},
                   {partner, keep_first, keep_count}, &reduction, hop++, options, timeout, op);
    if (upper) lo = mid; else hi = mid;
  }

  // 3. Recursive doubling.
  for (int mask = 1; mask < p; mask *= 2) {
    const int partner = real_rank(v ^ mask);
    const int length = hi - lo;
    const int other_lo = (v & mask) ? lo - length : hi;
    const auto [mine_first, mine_count] = blocks(lo, hi);
    const auto [other_first, other_count] = blocks(other_lo, other_lo + length);
    exchange_slots(comm, tag, layout, work, {partner, mine_first, mine_count},
                   {partner, other_first, other_count}, nullptr, 0, options, timeout, op);
    lo = std::min(lo, other_lo);
    hi = lo + 2 * length;
  }

  // 4. Unfold (odd side).
  if (r < 2 * m) {
    exchange_slots(comm, tag, layout, work, {r - 1, 0, all}, {}, nullptr, 0, options, timeout, op);
  }
}

}  // namespace qccl
