#include "qccl/common/allocator_settings.h"

#include <climits>
#include <cstdlib>
#include <string_view>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace qccl {

bool keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
  // Above the threshold a block is mapped and unmapped; setting it also
  // stops glibc's dynamic adjustment of it and of the trim threshold.
  constexpr int kMapAbove = 1 << 30;
  // A heap's free top is returned to the kernel past this: never.
  constexpr int kNeverTrim = INT_MAX;
  // A thread's heap (64 MiB at most) is unmapped once wholly free unless
  // the heap before it has less room left than this pad: with a pad of a
  // whole heap, never. The main heap also grows in steps of this much
  // address space (not memory: untouched pages cost nothing).
  constexpr int kTopPad = 64 << 20;
  return mallopt(M_MMAP_THRESHOLD, kMapAbove) == 1 && mallopt(M_TRIM_THRESHOLD, kNeverTrim) == 1 &&
         mallopt(M_TOP_PAD, kTopPad) == 1;
#else
  return false;
#endif
}

bool allocator_set_by_environment() {
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables != nullptr && std::string_view(tunables).find("glibc.malloc.") != std::string_view::npos;
}

}  // namespace qccl
