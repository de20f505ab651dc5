// The messages of Global-QSGD's sparse path (Algorithm 1, lines 6-8): what
// one rank sends every other rank of its codes, in the smaller of two forms.
//
// - Entries: each non-zero code with its uint32 index, 5 bytes per non-zero.
//   Right for scattered non-zeros.
// - Runs: the ranges of its support (the rows of embedding tables a batch
//   touched), 8 bytes each (uint32 first and count), then one code byte per
//   element of them, zeros included. An embedding row of 16 takes 24 bytes
//   instead of up to 80: rows are where sparse gradients come from, and
//   their elements are mostly non-zero.
//
// A message starts with a uint32 word: kEntriesMessage, or the number of
// runs. Both forms expand to the same entries (zero codes dropped), which
// merge_by_index.h sums, so the result does not depend on the form.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "qccl/collectives/layout.h"

namespace qccl {

inline constexpr std::uint32_t kEntriesMessage = 0xffffffffu;

// The bytes of the largest message of a rank whose support holds `bound`
// elements (or that has `bound` non-zeros): the entries form's, which the
// runs form replaces only when smaller.
inline std::size_t sparse_message_capacity(std::size_t bound) { return 4 + 5 * bound; }

// This rank's message into `out`: its non-zero codes `codes` at `index`
// (increasing), or, when `runs` is not empty and that is smaller, `runs`
// (sorted, disjoint) with `run_codes`, one per element of them in order.
void pack_sparse_message(std::span<const std::uint32_t> index, std::span<const std::byte> codes,
                         std::span<const Range> runs, std::span<const std::byte> run_codes,
                         std::vector<std::byte>& out);

// The ranks' messages (sizes[r] bytes of rank r, back to back in `all`) as
// entry blocks in merge_by_index's layout, in `entries`; returns each
// rank's count. Throws CommError naming `what` and the rank for a message
// that is cut short, too long, or holds a run beyond `length`.
std::vector<std::size_t> expand_sparse_messages(std::span<const std::byte> all,
                                                std::span<const std::size_t> sizes,
                                                std::size_t length, std::string_view what,
                                                std::vector<std::byte>& entries);

}  // namespace qccl
