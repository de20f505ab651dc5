#include "qccl/collectives/host_pipeline.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "qccl/collectives/hierarchical.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

// How far each level has come, and the first failure of either. Each level
// waits here for the other's part, at most `timeout`.
class PipelineProgress {
 public:
  explicit PipelineProgress(Timeout timeout) : timeout_(timeout) {}

  void summed(std::size_t part) { advance(summed_, part); }
  void exchanged(std::size_t part) { advance(exchanged_, part); }
  void await_sum(std::size_t part) { await(summed_, part, "the host's sum"); }
  void await_exchange(std::size_t part) { await(exchanged_, part, "the exchange across hosts"); }

  // Records `error` unless an earlier failure was recorded; true if it was
  // the first.
  bool fail(std::exception_ptr error) {
    std::lock_guard lock(mutex_);
    if (failure_) return false;
    failure_ = std::move(error);
    changed_.notify_all();
    return true;
  }
  std::exception_ptr failure() const {
    std::lock_guard lock(mutex_);
    return failure_;
  }

 private:
  void advance(std::size_t& done, std::size_t part) {
    std::lock_guard lock(mutex_);
    done = part + 1;
    changed_.notify_all();
  }
  void await(const std::size_t& done, std::size_t part, const char* what) {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_until(lock, deadline_after(timeout_),
                             [&] { return done > part || failure_ != nullptr; })) {
      throw TimeoutError("hierarchical allreduce: " + std::string(what) + " of part " +
                         std::to_string(part) + " did not finish within " + to_string(timeout_) +
                         "; a rank of this host or across hosts may be stalled (raise the "
                         "timeout if the step is legitimately slow)");
    }
    if (failure_) {
      throw CommError("hierarchical allreduce: stopped because the other level failed");
    }
  }

  Timeout timeout_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t summed_ = 0, exchanged_ = 0;
  std::exception_ptr failure_;
};

// Makes `level`'s call in flight fail: its point-to-point waits at their
// next slice, its transport-level collective where the transport can stop
// it (Transport::interrupt). The call has failed on this rank, so the
// communicator is not used again.
void stop_level(Communicator& level, const std::string& reason) {
  level.cancel(reason);
  level.transport().interrupt(reason);
}

// The host's steps, in the order every rank of the host follows: sum 0,
// then for each part k: sum k+1 (so the next exchange can start as soon as
// this one ends), wait for exchange k, share k.
void run_within_host(std::size_t parts, const HostPipelineSteps& steps,
                     PipelineProgress& progress) {
  steps.sum_within_host(0);
  progress.summed(0);
  for (std::size_t k = 0; k < parts; ++k) {
    if (k + 1 < parts) {
      steps.sum_within_host(k + 1);
      progress.summed(k + 1);
    }
    progress.await_exchange(k);
    steps.gather_within_host(k);
  }
}

}  // namespace

// Parts of about part_bytes of fp32, 2..kMaxHostPipelineParts of them, cut
// by split_range on the reduction's granularity.
std::vector<Range> host_pipeline_parts(std::size_t count, std::size_t part_bytes,
                                       std::size_t granularity) {
  const std::size_t part_elements = part_bytes / sizeof(float);
  const std::size_t wanted = part_elements == 0 ? 1 : count / part_elements;
  const std::size_t parts = std::clamp<std::size_t>(wanted, 1, kMaxHostPipelineParts);
  return split_range({0, count}, parts, std::max<std::size_t>(granularity, 1));
}

HostPartSlices host_part_slices(std::span<const Range> parts, int local_size, int local_rank,
                                std::size_t granularity) {
  HostPartSlices result;
  for (const Range& part : parts) {
    result.slices.push_back(host_slices(part.count, local_size, granularity));
    const std::size_t count = result.slices.back()[static_cast<std::size_t>(local_rank)].count;
    result.own.push_back({result.own_total(), count});
  }
  return result;
}

void run_host_pipeline(HostGroups& groups, std::size_t parts, const HostPipelineSteps& steps,
                       Timeout timeout) {
  if (parts <= 1) {
    for (std::size_t k = 0; k < parts; ++k) {
      steps.sum_within_host(k);
      steps.across_hosts(k);
      steps.gather_within_host(k);
    }
    return;
  }
  PipelineProgress progress(timeout);
  {
    std::jthread within([&] {
      try {
        run_within_host(parts, steps, progress);
      } catch (...) {
        if (progress.fail(std::current_exception())) {
          stop_level(groups.across(), "hierarchical allreduce: a step within the host failed");
        }
      }
    });
    try {
      for (std::size_t k = 0; k < parts; ++k) {
        progress.await_sum(k);
        steps.across_hosts(k);
        progress.exchanged(k);
      }
    } catch (...) {
      if (progress.fail(std::current_exception())) {
        stop_level(groups.local(), "hierarchical allreduce: the exchange across hosts failed");
      }
    }
  }  // joins the host's thread
  if (const std::exception_ptr failure = progress.failure()) std::rethrow_exception(failure);
}

}  // namespace qccl
