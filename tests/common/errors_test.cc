// Context added to an error keeps its type, so callers (and exit codes) can
// still tell a mismatch from a timeout.
#include <gtest/gtest.h>

#include <functional>

#include "qccl/common/errors.h"

namespace qccl {
namespace {

template <typename E>
void expect_kept(const std::function<void()>& raise) {
  try {
    try {
      raise();
    } catch (...) {
      rethrow_with_context("step 3, bucket 1: ");
    }
  } catch (const E& e) {
    EXPECT_EQ(std::string(e.what()), "step 3, bucket 1: cause");
    return;
  } catch (...) {
  }
  ADD_FAILURE() << "the error changed type";
}

TEST(ErrorsTest, ContextKeepsTheErrorType) {
  expect_kept<NonFiniteError>([] { throw NonFiniteError("cause"); });
  expect_kept<MismatchError>([] { throw MismatchError("cause"); });
  expect_kept<TimeoutError>([] { throw TimeoutError("cause"); });
  expect_kept<CommError>([] { throw CommError("cause"); });
  expect_kept<IoError>([] { throw IoError("cause"); });
  expect_kept<InvalidArgument>([] { throw InvalidArgument("cause"); });
  // A NonFiniteError is an InvalidArgument too; it must not become a plain one.
  try {
    try {
      throw NonFiniteError("cause");
    } catch (...) {
      rethrow_with_context("x: ");
    }
  } catch (const NonFiniteError&) {
  } catch (...) {
    ADD_FAILURE() << "NonFiniteError lost its type";
  }
  // Foreign exceptions pass unchanged.
  EXPECT_THROW(
      {
        try {
          throw std::logic_error("other");
        } catch (...) {
          rethrow_with_context("x: ");
        }
      },
      std::logic_error);
}

}  // namespace
}  // namespace qccl
