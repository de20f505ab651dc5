#include "qccl/common/allocator_settings.h"
#include "qccl/tools/cli.h"

int main(int argc, char** argv) {
  // Each step's large blocks stay in the process for the next step instead
  // of being unmapped and faulted in again (allocator_settings.h); first
  // thing, before MPI and the threads start. The launch line's own malloc
  // settings win.
  if (!qccl::allocator_set_by_environment()) qccl::keep_freed_memory_for_reuse();
  return qccl::tools::run_cli(argc, argv);
}
