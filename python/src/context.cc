#include "context.h"

#include <cmath>

#include "qccl/common/errors.h"

namespace qccl::python {

Timeout timeout_from_seconds(double seconds, const char* what) {
  if (!std::isfinite(seconds) || seconds <= 0) {
    throw InvalidArgument(std::string(what) + " must be a positive number of seconds, not " +
                          std::to_string(seconds));
  }
  return Timeout(static_cast<Timeout::rep>(std::ceil(seconds * 1000.0)));
}

Context::Context(double timeout_seconds) : timeout_seconds_(timeout_seconds) {
  CommunicatorOptions options;
  options.timeout = timeout_from_seconds(timeout_seconds, "qccl.init(timeout=...)");
  runtime_ = std::make_unique<MpiRuntime>(nullptr, nullptr);
  transport_ = runtime_->world_transport();
  comm_ = std::make_unique<Communicator>(*transport_, options);
  rank_ = transport_->rank();
  size_ = transport_->size();
}

Context::~Context() { close(); }

std::string Context::thread_level() const { return std::string(runtime_->thread_level()); }

Communicator& Context::communicator() {
  if (comm_ == nullptr) {
    throw InvalidArgument("qccl was shut down (qccl.shutdown(), or the interpreter is exiting); "
                          "MPI cannot start again in this process");
  }
  return *comm_;
}

std::unique_ptr<Communicator> Context::split(const std::string& name) {
  return communicator().split(name);
}

void Context::add_user(std::weak_ptr<Closable> user) {
  std::lock_guard lock(users_mutex_);
  users_.push_back(std::move(user));
}

void Context::close() {
  std::vector<std::weak_ptr<Closable>> users;
  {
    std::lock_guard lock(users_mutex_);
    users.swap(users_);
  }
  for (const auto& user : users) {
    if (const auto live = user.lock()) live->close();
  }
  comm_.reset();
  transport_.reset();
  runtime_.reset();
}

}  // namespace qccl::python
