#include "group_runner.h"

#include "qccl/common/errors.h"

namespace qccl::python {

GroupRunner::GroupRunner(pybind11::object ops, Timeout timeout)
    : transport_(std::make_unique<GroupTransport>(std::move(ops), timeout)) {
  CommunicatorOptions options;
  options.timeout = timeout;
  comm_ = std::make_unique<Communicator>(*transport_, options, "world");
}

void GroupRunner::run(const std::string& what,
                      const std::function<void(Communicator&)>& operation) {
  std::lock_guard lock(mutex_);
  if (!closed_.empty()) {
    throw InvalidArgument(what + ": this DDP hook " + closed_ + "; create a new hook with "
                          "qccl.ddp_hook() and register it on the model");
  }
  operation(*comm_);
}

void GroupRunner::close(const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (closed_.empty()) closed_ = reason;
}

}  // namespace qccl::python
