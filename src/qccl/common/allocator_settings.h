// How the process's allocator treats large freed blocks. glibc's malloc
// serves a block above its mmap threshold (128 KiB, raised dynamically up
// to 32 MiB) with a fresh mapping and unmaps it on free, and it trims the
// heaps' free tops back to the kernel. A training step allocates the same
// large blocks every step — autograd's gradients and activations,
// libtorch's temporaries, message buffers — so each step faults every
// 4 KiB page of them in again: on the 12.8 M-parameter recommender with
// Adam, 25 000 minor faults and 80 ms a step.
#pragma once

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

// Keeps freed memory in the process for the next step: blocks up to 1 GiB
// come from the heaps (no per-block mapping), the heaps are never trimmed,
// and threads' heaps are never unmapped, so a block freed by one step is
// reused by the next without a fault. The process keeps its peak footprint
// instead of returning it. Call once at start-up, before other threads
// allocate (`qccl` does, first thing). Returns false, changing nothing,
// where the C library has no such settings (not glibc).
bool keep_freed_memory_for_reuse();

// Whether the launch line chose malloc's settings itself (MALLOC_MMAP_THRESHOLD_,
// MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_ or glibc.malloc tunables in
// GLIBC_TUNABLES): then they win and `qccl` leaves them.
bool allocator_set_by_environment();

}  // namespace qccl
QCCL_API_END
