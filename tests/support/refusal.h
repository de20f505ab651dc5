// Test helper: the message of the InvalidArgument a body throws, so that a
// test can check that a refusal names the option and the fix.
#pragma once

#include <string>

#include "qccl/common/errors.h"

namespace qccl::test {

// The message of the InvalidArgument `body` throws ("" if none).
template <class F>
std::string refusal(F body) {
  try {
    body();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

}  // namespace qccl::test
