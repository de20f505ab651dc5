// Minor page faults: the kernel mapping a page on first touch. A training
// step that allocates large temporaries and hands them back to the kernel
// (glibc unmaps big blocks and trims its heaps) pays one fault per 4 KiB
// page touched again on every step; a steady-state step should take none.
// The counts come from getrusage and cost a system call each.
// Not an installed header, but exported from libqccl_core.so: libqccl_engines.so
// calls them.
#pragma once

#include <cstdint>

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

// Minor faults of the calling thread so far (RUSAGE_THREAD).
std::uint64_t thread_minor_faults();
// Minor faults of the whole process so far (RUSAGE_SELF): every thread.
std::uint64_t process_minor_faults();

}  // namespace qccl
QCCL_API_END
