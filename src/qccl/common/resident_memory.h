// The peak resident memory of this process (Linux's VmHWM), and resetting
// it, so that a phase (training steps) can be measured without an earlier
// one (evaluation on large batches) masking it. getrusage's ru_maxrss never
// goes down; VmHWM does when 5 is written to /proc/self/clear_refs.
// Not an installed header, but exported from libqccl_core.so: libqccl_engines.so
// calls them.
#pragma once

#include <cstdint>

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

// Starts a new peak at the current resident size; false where the kernel
// does not offer it (the peak then keeps counting from the start).
bool reset_peak_resident();
// Bytes: VmHWM, or ru_maxrss where /proc/self/status cannot be read.
std::uint64_t peak_resident_bytes();
// The address space this process has mapped (VmSize), which an
// address-space limit (ulimit -v) bounds; 0 where it cannot be read.
std::uint64_t mapped_bytes();

}  // namespace qccl
QCCL_API_END
