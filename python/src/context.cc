#include "context.h"

#include <cmath>

#include "qccl/common/errors.h"

namespace qccl::python {
namespace {

constexpr const char* kAfterShutdown =
    "MPI cannot start again in this process: make qccl's calls before qccl.shutdown(), and start "
    "a new process (mpirun) for more";

}  // namespace

Timeout timeout_from_seconds(double seconds, const char* what) {
  // At most 30 days, as on the command line: beyond it the conversion to
  // the waits' clocks overflows.
  constexpr double kMaxSeconds = 30.0 * 24 * 3600;
  if (!std::isfinite(seconds) || seconds <= 0 || seconds > kMaxSeconds) {
    throw InvalidArgument(std::string(what) + " must be a number of seconds in (0, 2592000] (30 "
                          "days), not " + std::to_string(seconds));
  }
  return Timeout(static_cast<Timeout::rep>(std::ceil(seconds * 1000.0)));
}

Context::Context(double timeout_seconds)
    : timeout_seconds_(timeout_seconds),
      timeout_(timeout_from_seconds(timeout_seconds, "qccl.init(timeout=...)")) {
  CommunicatorOptions options;
  options.timeout = timeout_;
  runtime_ = std::make_unique<MpiRuntime>(nullptr, nullptr);
  thread_level_ = std::string(runtime_->thread_level());
  transport_ = runtime_->world_transport();
  comm_ = std::make_unique<Communicator>(*transport_, options);
  rank_ = transport_->rank();
  size_ = transport_->size();
}

// Every lease holder (a compressor, a hook, a Python call) keeps the context
// alive, so none is in flight here and close() only releases. An error is
// dropped: a destructor cannot raise it, and the process is ending it.
Context::~Context() {
  try {
    close();
  } catch (...) {
  }
}

Context::WorldLease Context::use_world(const std::string& what, std::optional<Timeout> timeout) {
  auto lease = lifecycle_.enter(what, timeout.value_or(timeout_), true, kAfterShutdown);
  return WorldLease(std::move(lease), comm_.get());
}

void Context::add_user(std::weak_ptr<Closable> user) {
  std::lock_guard lock(users_mutex_);
  std::erase_if(users_, [](const std::weak_ptr<Closable>& u) { return u.expired(); });
  users_.push_back(std::move(user));
}

void Context::close() {
  const auto closing = lifecycle_.close(
      "was shut down (qccl.shutdown(), or the interpreter is exiting)", timeout_,
      [this] { release(); },
      [this](const std::string& in_flight) {
        comm_->cancel("qccl.shutdown() was called while " + in_flight + " ran, and it did not "
                      "finish within its timeout");
      });
  if (closing.outcome == Lifecycle::Closing::leases_held) {
    throw TimeoutError("qccl.shutdown(): " + closing.in_flight + " on another thread still runs "
                       "on qccl's world communicator after its timeout and a cancellation; new "
                       "calls fail, and MPI ends when the process does (wait for that thread "
                       "before calling qccl.shutdown())");
  }
  if (closing.outcome == Lifecycle::Closing::still_releasing) {
    throw TimeoutError("qccl.shutdown(): another thread's qccl.shutdown() has been ending qccl "
                       "for " + to_string(4 * timeout_) + " (closing the DDP hooks' streams and "
                       "MPI, whose end waits for every rank to call qccl.shutdown()); new calls "
                       "fail meanwhile");
  }
}

// The hooks' streams first (each waits for its buckets in flight), then the
// communicator, its transport and MPI. No lease is held: hooks are created
// and registered under one, so the list of users is complete.
void Context::release() {
  std::vector<std::weak_ptr<Closable>> users;
  {
    std::lock_guard lock(users_mutex_);
    users = users_;
  }
  for (const auto& user : users) {
    if (const auto live = user.lock()) live->close("was closed (qccl.shutdown())");
  }
  {
    std::lock_guard lock(users_mutex_);
    users_.clear();
  }
  comm_.reset();
  transport_.reset();
  runtime_.reset();
}

}  // namespace qccl::python
