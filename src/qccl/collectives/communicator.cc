#include "qccl/collectives/communicator.h"

#include <algorithm>
#include <map>

#include "qccl/collectives/host_groups.h"
#include "qccl/common/errors.h"
#include "qccl/common/progress_watch.h"

namespace qccl {
namespace {

// How long one slice of a wait lasts before the cancel flag is looked at.
constexpr Timeout kWaitSlice{10};

}  // namespace

Communicator::Communicator(Transport& transport, CommunicatorOptions options, std::string name)
    : transport_(transport), options_(options), name_(std::move(name)) {
  if (options_.timeout.count() <= 0) {
    throw InvalidArgument("communicator timeout must be positive, got " +
                          to_string(options_.timeout));
  }
}

std::unique_ptr<Communicator> Communicator::split(std::string name) {
  if (poisoned()) {
    throw CommError("cannot split stream '" + name + "' from a communicator that an earlier "
                    "failure made unusable (" + poison_reason() + ")");
  }
  auto duplicate = transport_.duplicate(options_.timeout);
  auto split = std::make_unique<Communicator>(*duplicate, options_, std::move(name));
  split->owned_ = std::move(duplicate);
  return split;
}

void Communicator::poison(std::string reason) {
  std::lock_guard lock(poison_mutex_);
  if (poison_.empty()) poison_ = std::move(reason);
  poisoned_.store(true);
}

// Point-to-point waits look at the flag between slices; a transport-level
// collective of a split communicator is stopped through its own duplicate
// (Transport::interrupt), which nothing else uses.
void Communicator::cancel(std::string reason) {
  poison(reason);
  cancelled_.store(true);
  if (owned_) owned_->interrupt(reason);
  std::lock_guard lock(groups_mutex_);
  if (host_groups_) {  // a hierarchical call may wait on either level
    host_groups_->local().cancel(reason);
    host_groups_->across().cancel(reason);
  }
}

Communicator::~Communicator() = default;

std::uint64_t Communicator::data_bytes_sent() const {
  const std::uint64_t exchanged = exchange_bytes_.load();
  const std::uint64_t sent = transport_.stats().bytes_sent;
  std::uint64_t total = sent > exchanged ? sent - exchanged : 0;
  std::lock_guard lock(groups_mutex_);
  if (host_groups_) {
    total += host_groups_->local().data_bytes_sent() + host_groups_->across().data_bytes_sent();
  }
  return total;
}

HostGroups& Communicator::host_groups() {
  {
    std::lock_guard lock(groups_mutex_);
    if (host_groups_) return *host_groups_;
  }
  // Made outside the lock: the splits wait on the other ranks, and only the
  // thread driving this communicator makes them.
  auto groups = std::make_unique<HostGroups>(
      *this, discover_host_layout(transport_, options_.ranks_per_host, options_.timeout));
  std::lock_guard lock(groups_mutex_);
  host_groups_ = std::move(groups);
  return *host_groups_;
}

std::string Communicator::poison_reason() const {
  std::lock_guard lock(poison_mutex_);
  return poison_;
}

void Communicator::wait(Request& request, Timeout timeout, std::string_view operation) {
  const ProgressWatch::Wait waiting;  // on a peer: not computation
  const auto deadline = Clock::now() + timeout;
  try {
    while (true) {
      const auto left = std::chrono::duration_cast<Timeout>(deadline - Clock::now());
      if (request.wait_for(std::clamp(left, Timeout(0), kWaitSlice))) return;
      if (cancelled_.load()) {
        throw CommError(std::string(operation) + ": " + request.describe() +
                        " abandoned: " + poison_reason());
      }
      if (left <= kWaitSlice) {
        throw TimeoutError(std::string(operation) + ": " + request.describe() +
                           " did not complete within " + to_string(timeout) +
                           "; is that rank alive, and do all ranks make the same calls in the "
                           "same order?");
      }
    }
  } catch (const CommError& e) {
    if (cancelled_.load()) throw;
    throw CommError(std::string(operation) + ": " + e.what());
  }
}

std::span<std::byte> Communicator::scratch(Scratch which, std::size_t bytes) {
  auto& buffer = scratch_[static_cast<int>(which)];
  if (buffer.size() < bytes) buffer.resize(bytes);
  return std::span<std::byte>(buffer).first(bytes);
}

}  // namespace qccl
