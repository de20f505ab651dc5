// Exception types thrown by qccl. Every message names the cause and what to do
// about it; callers catch qccl::Error to handle any of them.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

// Base of every qccl exception.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A bad argument or configuration given on this rank (e.g. a buffer of the
// wrong size, an unknown option value).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// NaN or Inf in the data a codec was asked to reduce, on some rank. Raised
// on every rank (the global-norm exchange makes it visible to all) before
// any data moved, so the communicator stays usable and the step can be
// skipped.
class NonFiniteError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

// Ranks called the same collective with arguments that differ (length,
// operation, algorithm, reduction, root). Raised on every rank.
class MismatchError : public Error {
 public:
  using Error::Error;
};

// A wait did not complete within its timeout. The communicator that raised it
// is poisoned: later calls fail at once with a CommError naming this cause.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// The transport failed (message truncated, peer gone, MPI error) or the
// communicator was poisoned by an earlier failure or an abort.
class CommError : public Error {
 public:
  using Error::Error;
};

// A file could not be written (or read back) part-way through: disk full,
// an I/O error, a file-size limit. The message names the file.
class IoError : public Error {
 public:
  using Error::Error;
};

// Memory ran out: an allocation failed (std::bad_alloc, or libtorch's
// allocator). The message says where and what to change.
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};

// Rethrows the exception being handled (call it inside a catch block) as an
// error of the same type — so a MismatchError stays one, with its exit code
// — whose message is `context` followed by the original message. Exceptions
// that are not qccl errors are rethrown unchanged.
[[noreturn]] void rethrow_with_context(std::string_view context);

}  // namespace qccl
QCCL_API_END
