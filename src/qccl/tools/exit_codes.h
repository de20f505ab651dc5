// Exit codes of the qccl program, shared by every command.
#pragma once

namespace qccl::tools {

enum ExitCode : int {
  kExitOk = 0,
  kExitError = 1,         // a runtime failure (communication, timeout, mismatch)
  kExitUsage = 2,         // bad command line
  kExitWrongResults = 3,  // a benchmark's correctness check found wrong values
};

}  // namespace qccl::tools
