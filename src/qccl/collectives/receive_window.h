// How many receives a schedule keeps in flight (CollectiveOptions::window).
//
// Where two ranks send to each other — a 2-rank ring, every step of
// halving-doubling, 2 hosts of the hierarchical algorithm — MPI's TCP
// transport carries both directions on one connection, and each chunk's
// rendezvous waits behind the data already queued in it. A sender of
// uncompressed fp32 queues megabytes at once, so a chunk takes tens of
// milliseconds from its receive being posted to its arrival, and 4 chunks
// of 1 MiB in flight left a 1 Gbit/s link a third idle; 16 kept it at 90%.
// A codec's sender is paced by its encoding and queues little, and 16
// receives in flight cost Global-QSGD 2–18% (docs/cluster.md,
// "the receive window"). So the automatic window follows the chunks' size
// on the wire.
#pragma once

#include <cstddef>

#include "qccl/collectives/layout.h"
#include "qccl/collectives/options.h"

namespace qccl {

inline constexpr std::size_t kUncompressedWindow = 16;
inline constexpr std::size_t kCompressedWindow = 4;

// options.window when set (>= 1); automatic (0): kUncompressedWindow when
// the layout's largest chunk carries 4 bytes or more per element on the
// wire (fp32, uncompressed), kCompressedWindow otherwise (codecs, and raw
// bytes, whose elements are bytes).
std::size_t receive_window(const CollectiveOptions& options, const SlotLayout& layout);

}  // namespace qccl
