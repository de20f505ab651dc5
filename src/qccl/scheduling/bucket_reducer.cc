#include "qccl/scheduling/bucket_reducer.h"

#include <string>

#include "qccl/common/duration.h"
#include "qccl/common/errors.h"

namespace qccl {

BucketReducer::BucketReducer(Communicator& comm, CollectiveOptions options)
    : comm_(comm), options_(options), thread_([this] { run(); }) {}

BucketReducer::~BucketReducer() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();  // a running collective ends within its own timeout
}

void BucketReducer::begin(std::vector<BucketWork> buckets) {
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    if (buckets[b].codec == nullptr) {
      throw InvalidArgument("bucket reducer: bucket " + std::to_string(b) + " has no codec");
    }
  }
  std::lock_guard lock(mutex_);
  if (active_) {
    throw InvalidArgument("bucket reducer: begin() while a step is running; call finish() first");
  }
  buckets_ = std::move(buckets);
  ready_.assign(buckets_.size(), 0);
  durations_.assign(buckets_.size(), 0.0);
  phases_.assign(buckets_.size(), PhaseTimes{});
  next_ = done_ = 0;
  error_ = nullptr;
  failed_.reset();
  active_ = true;
}

void BucketReducer::ready(std::size_t bucket) {
  {
    std::lock_guard lock(mutex_);
    if (!active_ || bucket >= buckets_.size()) {
      throw InvalidArgument("bucket reducer: bucket " + std::to_string(bucket) +
                            " is not part of the running step (" +
                            std::to_string(buckets_.size()) + " buckets)");
    }
    if (ready_[bucket]) {
      throw InvalidArgument("bucket reducer: bucket " + std::to_string(bucket) +
                            " was marked ready twice in one step");
    }
    ready_[bucket] = 1;
  }
  changed_.notify_all();
}

void BucketReducer::finish(Timeout timeout) {
  std::unique_lock lock(mutex_);
  if (!active_) throw InvalidArgument("bucket reducer: finish() without begin()");
  const bool complete = changed_.wait_for(lock, timeout, [&] { return done_ == buckets_.size(); });
  if (!complete) {
    const std::size_t b = done_;
    // The step stays active: the thread may still be inside a collective.
    throw TimeoutError("bucket reducer: bucket " + std::to_string(b) + " of " +
                       std::to_string(buckets_.size()) + " not reduced after " +
                       std::to_string(timeout.count()) + " ms" +
                       (ready_[b] ? " (it was marked ready: a peer is late or gone)"
                                  : " (it was never marked ready)"));
  }
  active_ = false;
  if (error_) std::rethrow_exception(error_);
}

std::vector<double> BucketReducer::durations() const {
  std::lock_guard lock(mutex_);
  return durations_;
}

std::optional<std::size_t> BucketReducer::failed_bucket() const {
  std::lock_guard lock(mutex_);
  return failed_;
}

std::vector<PhaseTimes> BucketReducer::phase_times() const {
  std::lock_guard lock(mutex_);
  return phases_;
}

// The communication thread: launches the next bucket once it is ready. After
// a failure the remaining buckets are skipped (the communicator is poisoned
// and every rank fails the same way).
void BucketReducer::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] {
      return stop_ || (active_ && next_ < buckets_.size() && (ready_[next_] || error_));
    });
    if (stop_) return;
    const std::size_t b = next_++;
    if (error_) {
      ++done_;
      changed_.notify_all();
      continue;
    }
    const BucketWork work = buckets_[b];
    lock.unlock();
    std::exception_ptr failure;
    PhaseTimes phases;
    CollectiveOptions options = options_;
    options.phases = &phases;
    const auto start = Clock::now();
    try {
      work.codec->allreduce_mean(comm_, work.data, options);
    } catch (...) {
      failure = std::current_exception();
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    lock.lock();
    durations_[b] = seconds;
    phases_[b] = phases;
    if (failure && !error_) {
      error_ = failure;
      failed_ = b;
    }
    ++done_;
    changed_.notify_all();
  }
}

}  // namespace qccl
