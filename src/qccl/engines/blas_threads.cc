#include "qccl/engines/blas_threads.h"

#include <dlfcn.h>

namespace qccl::engines {

bool set_blas_threads(int threads) {
  using SetThreads = void (*)(int);
  // Looked up rather than linked: qccl links libtorch, not the BLAS library
  // it loads (Debian's alternatives choose which one that is).
  const auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set == nullptr) return false;
  set(threads < 1 ? 1 : threads);
  return true;
}

}  // namespace qccl::engines
