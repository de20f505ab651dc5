// The rank's thread share reaches OpenBLAS, the BLAS library Debian's
// libtorch loads (libopenblas0-pthread, installed by scripts/install-deps).
#include "qccl/engines/blas_threads.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

namespace qccl::engines {
namespace {

TEST(BlasThreads, TheRankShareReachesOpenBlas) {
  using GetThreads = int (*)();
  const auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  ASSERT_NE(get, nullptr) << "OpenBLAS is not loaded: libtorch should load it on Debian";
  const int before = get();
  ASSERT_TRUE(set_blas_threads(1));
  EXPECT_EQ(get(), 1);
  ASSERT_TRUE(set_blas_threads(0));  // below 1 means 1
  EXPECT_EQ(get(), 1);
  ASSERT_TRUE(set_blas_threads(before));
  EXPECT_EQ(get(), before);
}

}  // namespace
}  // namespace qccl::engines
