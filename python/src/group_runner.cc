#include "group_runner.h"

#include <chrono>
#include <string>

#include "qccl/common/errors.h"

namespace qccl::python {

GroupRunner::GroupRunner(pybind11::object ops, Timeout timeout, std::string owner,
                         std::string remedy)
    : timeout_(timeout),
      owner_(std::move(owner)),
      remedy_(std::move(remedy)),
      transport_(std::make_unique<GroupTransport>(std::move(ops), timeout)) {
  CommunicatorOptions options;
  options.timeout = timeout;
  comm_ = std::make_unique<Communicator>(*transport_, options, "world");
}

bool GroupRunner::closed(std::string* reason) {
  std::lock_guard lock(state_);
  if (closed_.empty()) return false;
  if (reason != nullptr) *reason = closed_;
  return true;
}

void GroupRunner::run(const std::string& what,
                      const std::function<void(Communicator&)>& operation,
                      std::optional<Timeout> wait) {
  const Timeout limit = wait.value_or(timeout_);
  std::unique_lock lock(running_, std::defer_lock);
  if (!lock.try_lock_for(limit)) {
    throw TimeoutError(what + ": another thread's call on the process group has held it for " +
                       std::to_string(std::chrono::duration_cast<std::chrono::seconds>(limit).count()) +
                       " s; is it stuck waiting for a rank?");
  }
  if (std::string reason; closed(&reason)) {
    throw InvalidArgument(what + ": " + owner_ + " " + reason + "; " + remedy_);
  }
  operation(*comm_);
}

void GroupRunner::close(const std::string& reason) {
  {
    std::lock_guard lock(state_);
    if (closed_.empty()) closed_ = reason;
  }
  std::unique_lock lock(running_, std::defer_lock);
  if (!lock.try_lock_for(timeout_)) {
    throw TimeoutError(owner_ + ": a call on the process group still runs after " +
                       std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout_).count()) +
                       " s; is it stuck waiting for a rank?");
  }
}

}  // namespace qccl::python
