// Summing sparse entries that every rank gathered (Global-QSGD's sparse
// path, Algorithm 1, lines 6-8): one block per rank, in rank order, each
// its `count` uint32 indices — strictly increasing — followed by their
// one-byte codes.
//
// The ranks' lists are merged by index (a min-heap on (index, rank)), so
// each index is visited once, in increasing order, with its codes in rank
// order. The sum of an index then lives in a register rather than in an
// accumulator the length of the data: the blocks are read once, in order,
// and the output is written once per index, moving forward through it. A
// per-element accumulator costs a cache miss per entry and per index twice
// more (the write of the mean, the reset), and memory the size of the data.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qccl/common/errors.h"

namespace qccl {

// Visits every index that some rank's block holds, in increasing order: for
// each, add(rank, code) for every rank that holds it, in rank order, then
// done(index). Throws CommError naming `what` and the rank when a rank's
// indices do not increase or reach `length` (a corrupt message).
template <class Add, class Done>
void merge_by_index(std::span<const std::byte> all, std::span<const std::size_t> counts,
                    std::size_t length, std::string_view what, Add&& add, Done&& done) {
  struct Cursor {
    const std::byte* indices;
    const std::byte* codes;
    std::size_t at, count;
  };
  std::vector<Cursor> cursors;
  cursors.reserve(counts.size());
  std::size_t offset = 0;
  for (const std::size_t count : counts) {
    cursors.push_back({all.data() + offset, all.data() + offset + 4 * count, 0, count});
    offset += 5 * count;
  }
  if (offset > all.size()) {
    throw InvalidArgument(std::string(what) + ": the counts need " + std::to_string(offset) +
                          " bytes of entries, the gathered block has " +
                          std::to_string(all.size()));
  }
  const auto index_at = [&](std::size_t rank, std::size_t at) {
    std::uint32_t i;
    std::memcpy(&i, cursors[rank].indices + 4 * at, 4);
    return i;
  };
  const auto corrupt = [&](std::size_t rank, const char* why) {
    return CommError(std::string(what) + ": sparse entries from rank " + std::to_string(rank) +
                     " " + why + " (corrupt message?)");
  };
  // Keys (index << 32 | rank): the smallest index first, ties in rank order.
  std::vector<std::uint64_t> heap;
  heap.reserve(cursors.size());
  const auto key_of = [&](std::size_t rank, std::uint32_t i) {
    if (i >= length) throw corrupt(rank, "hold an index beyond the data");
    return static_cast<std::uint64_t>(i) << 32 | rank;
  };
  const auto push = [&](std::uint64_t key) {
    heap.push_back(key);
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  };
  for (std::size_t r = 0; r < cursors.size(); ++r) {
    if (cursors[r].count > 0) push(key_of(r, index_at(r, 0)));
  }
  // A rank's entries come in runs (an embedding row is consecutive
  // indices): after popping a rank, its entries are taken while they come
  // before the heap's smallest key, and the rank goes back to the heap only
  // when another rank's entry is due.
  bool any = false;
  std::uint32_t current = 0;
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    std::uint64_t key = heap.back();
    heap.pop_back();
    const std::uint64_t due = heap.empty() ? ~std::uint64_t{0} : heap.front();
    const auto r = static_cast<std::size_t>(key & 0xFFFFFFFFU);
    Cursor& cursor = cursors[r];
    while (true) {
      const auto i = static_cast<std::uint32_t>(key >> 32);
      if (any && i != current) done(current);
      any = true;
      current = i;
      add(r, static_cast<std::uint8_t>(cursor.codes[cursor.at]));
      if (++cursor.at == cursor.count) break;
      const std::uint32_t next = index_at(r, cursor.at);
      if (next <= i) throw corrupt(r, "hold indices out of order");
      key = key_of(r, next);
      if (key > due) {
        push(key);
        break;
      }
    }
  }
  if (any) done(current);
}

}  // namespace qccl
