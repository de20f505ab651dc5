// The launcher every command runs through: a failed allocation on any rank
// ends the run with a message saying where memory ran out, not a bare
// std::bad_alloc.
#include <gtest/gtest.h>

#include <new>
#include <stdexcept>

#include "qccl/common/errors.h"
#include "qccl/common/progress_watch.h"
#include "qccl/tools/exit_codes.h"
#include "qccl/tools/ranks.h"

namespace qccl::tools {
namespace {

int launch(int ranks, const std::function<void(Communicator&)>& body) {
  char name[] = "qccl";
  char* argv[] = {name, nullptr};
  return launch_on_ranks(ranks, CommunicatorOptions{Timeout(20000), true}, 1, argv,
                         [&](Communicator& comm, const Launch&) {
                           body(comm);
                           return kExitOk;
                         });
}

TEST(Launch, AFailedAllocationSaysWhereMemoryRanOut) {
  testing::internal::CaptureStderr();
  const int code = launch(2, [](Communicator& comm) {
    if (comm.rank() != 1) return;
    const ProgressWatch::Scope busy(comm.options().progress, 1, "building the model");
    throw std::bad_alloc();
  });
  const std::string printed = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, kExitError);
  EXPECT_NE(printed.find("memory ran out on rank 1 in building the model (std::bad_alloc): lower "
                         "--batch, --ranks or the model's size"),
            std::string::npos)
      << printed;
}

// libtorch reports a failed allocation as its own error, with a backtrace
// after the first line: only that line is kept.
TEST(Launch, LibtorchAllocationErrorsAreNamedTooWithoutTheirBacktrace) {
  testing::internal::CaptureStderr();
  const int code = launch(1, [](Communicator& comm) {
    const ProgressWatch::Scope busy(comm.options().progress, 0, "forward", 3);
    throw std::runtime_error(
        "DefaultCPUAllocator: can't allocate memory: you tried to allocate 8 bytes.\nframe #0: x");
  });
  const std::string printed = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, kExitError);
  EXPECT_NE(printed.find("memory ran out on rank 0 in step 3: forward (DefaultCPUAllocator: can't "
                         "allocate memory: you tried to allocate 8 bytes.)"),
            std::string::npos)
      << printed;
  EXPECT_EQ(printed.find("frame #0"), std::string::npos) << printed;
}

// An error the ranks agreed on (a checkpoint that could not be saved)
// carries a rank's failed allocation as text: it is named as one too.
TEST(Launch, AnAgreedErrorCarryingAFailedAllocationIsNamedToo) {
  testing::internal::CaptureStderr();
  const int code = launch(1, [](Communicator& comm) {
    const ProgressWatch::Scope busy(comm.options().progress, 0, "saving a checkpoint", 20);
    throw IoError("checkpoint of step 20 not saved: rank 0: std::bad_alloc");
  });
  const std::string printed = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, kExitError);
  EXPECT_NE(printed.find("memory ran out on rank 0 in step 20: saving a checkpoint (checkpoint of "
                         "step 20 not saved: rank 0: std::bad_alloc)"),
            std::string::npos)
      << printed;
}

// Other errors keep their type and exit code.
TEST(Launch, OtherErrorsAreUnchanged) {
  testing::internal::CaptureStderr();
  EXPECT_EQ(launch(1, [](Communicator&) { throw InvalidArgument("bad setting"); }), kExitUsage);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("qccl: bad setting"), std::string::npos);
}

}  // namespace
}  // namespace qccl::tools
