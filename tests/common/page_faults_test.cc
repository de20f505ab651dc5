// Page-fault counters count first touches, per thread; the start-up
// allocator settings make a freed large block come back without a fault,
// on the main thread's heap and on another thread's.
#include <sys/mman.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "qccl/common/allocator_settings.h"
#include "qccl/common/page_faults.h"

namespace qccl {
namespace {

constexpr std::size_t kPage = 4096;

void touch_pages(volatile char* data, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; i += kPage) data[i] = 1;
}

// A fresh anonymous mapping in small pages, never touched: one fault per
// page on first touch.
class FreshRegion {
 public:
  static constexpr std::size_t kBytes = 4 << 20;
  static constexpr std::size_t kPages = kBytes / kPage;
  FreshRegion()
      : data_(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) {
    if (data_ != MAP_FAILED) madvise(data_, kBytes, MADV_NOHUGEPAGE);
  }
  ~FreshRegion() {
    if (data_ != MAP_FAILED) munmap(data_, kBytes);
  }
  FreshRegion(const FreshRegion&) = delete;
  FreshRegion& operator=(const FreshRegion&) = delete;
  bool mapped() const { return data_ != MAP_FAILED; }
  void touch() { touch_pages(static_cast<char*>(data_), kBytes); }

 private:
  void* data_;
};

TEST(PageFaultsTest, CountsEveryFirstTouchOfThisThread) {
  FreshRegion region;
  ASSERT_TRUE(region.mapped());
  const auto thread_before = thread_minor_faults();
  const auto process_before = process_minor_faults();
  region.touch();
  EXPECT_GE(thread_minor_faults() - thread_before, FreshRegion::kPages);
  EXPECT_GE(process_minor_faults() - process_before, FreshRegion::kPages);
}

TEST(PageFaultsTest, AnotherThreadsFaultsCountForTheProcessOnly) {
  FreshRegion region;
  ASSERT_TRUE(region.mapped());
  const auto thread_before = thread_minor_faults();
  const auto process_before = process_minor_faults();
  std::thread([&] { region.touch(); }).join();
  EXPECT_LT(thread_minor_faults() - thread_before, FreshRegion::kPages / 4);
  EXPECT_GE(process_minor_faults() - process_before, FreshRegion::kPages);
}

// Faults taken touching a block of `bytes` allocated again after the same
// size was allocated, touched and freed.
std::uint64_t faults_reusing(std::size_t bytes) {
  char* first = static_cast<char*>(std::malloc(bytes));
  touch_pages(first, bytes);
  std::free(first);
  const auto before = thread_minor_faults();
  char* second = static_cast<char*>(std::malloc(bytes));
  touch_pages(second, bytes);
  const auto faults = thread_minor_faults() - before;
  std::free(second);
  return faults;
}

// 64 MiB is above glibc's largest dynamic mmap threshold (32 MiB): without
// the settings every such block is a new mapping, faulted in page by page.
TEST(AllocatorSettingsTest, AFreedLargeBlockComesBackWithoutFaults) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "malloc settings are glibc's";
#endif
  ASSERT_TRUE(keep_freed_memory_for_reuse());
  constexpr std::size_t kBytes = 64 << 20;
  EXPECT_LT(faults_reusing(kBytes), kBytes / kPage / 100) << "the main heap";
  // A thread's heap (64 MiB at most): trimmed or unmapped once free, by default.
  std::uint64_t thread_faults = 0;
  constexpr std::size_t kThreadBytes = 40 << 20;
  std::thread([&] { thread_faults = faults_reusing(kThreadBytes); }).join();
  EXPECT_LT(thread_faults, kThreadBytes / kPage / 100) << "a thread's heap";
}

TEST(AllocatorSettingsTest, TheLaunchLinesMallocSettingsWin) {
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                           "GLIBC_TUNABLES"}) {
    ASSERT_EQ(std::getenv(name), nullptr) << name << " is set in the test's environment";
  }
  EXPECT_FALSE(allocator_set_by_environment());
  setenv("MALLOC_TRIM_THRESHOLD_", "1073741824", 1);
  EXPECT_TRUE(allocator_set_by_environment());
  unsetenv("MALLOC_TRIM_THRESHOLD_");
  setenv("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=512", 1);
  EXPECT_FALSE(allocator_set_by_environment()) << "a tunable that is not malloc's";
  setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=1073741824", 1);
  EXPECT_TRUE(allocator_set_by_environment());
  unsetenv("GLIBC_TUNABLES");
}

}  // namespace
}  // namespace qccl
