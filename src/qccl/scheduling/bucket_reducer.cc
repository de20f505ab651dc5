#include "qccl/scheduling/bucket_reducer.h"

#include <string>

#include "qccl/common/duration.h"
#include "qccl/common/errors.h"
#include "qccl/common/page_faults.h"

namespace qccl {

BucketReducer::BucketReducer(Communicator& comm, CollectiveOptions options, std::string stream)
    : options_(options), stream_(comm, std::move(stream)) {}

void BucketReducer::begin(std::vector<BucketWork> buckets) {
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    if (buckets[b].codec == nullptr) {
      throw InvalidArgument("bucket reducer: bucket " + std::to_string(b) + " has no codec");
    }
  }
  std::lock_guard lock(mutex_);
  if (active_) {
    throw InvalidArgument("bucket reducer: begin() while a step is running: call finish() first "
                          "(after a finish() that timed out, a bucket was still inside a "
                          "collective and the stream is unusable)");
  }
  buckets_ = std::move(buckets);
  ready_.assign(buckets_.size(), 0);
  works_.assign(buckets_.size(), Work());
  spans_.assign(buckets_.size(), ClockSpan{});
  phases_.assign(buckets_.size(), PhaseTimes{});
  faults_.assign(buckets_.size(), 0);
  next_ = 0;
  failed_.reset();
  active_ = true;
}

void BucketReducer::ready(std::size_t bucket) {
  std::lock_guard lock(mutex_);
  if (!active_ || bucket >= buckets_.size()) {
    throw InvalidArgument("bucket reducer: bucket " + std::to_string(bucket) +
                          " is not part of the running step (" + std::to_string(buckets_.size()) +
                          " buckets)");
  }
  if (ready_[bucket]) {
    throw InvalidArgument("bucket reducer: bucket " + std::to_string(bucket) +
                          " was marked ready twice in one step");
  }
  ready_[bucket] = 1;
  while (next_ < buckets_.size() && ready_[next_]) launch(next_++);
}

// on_done goes in with the submission, so it runs on the stream's thread
// even when the bucket completes at once.
void BucketReducer::launch(std::size_t bucket) {
  const BucketWork work = buckets_[bucket];
  works_[bucket] = stream_.submit(
      "bucket " + std::to_string(bucket),
      [this, bucket, work](Communicator& comm) { reduce(comm, bucket, work); }, work.on_done);
  launched_.notify_all();
}

// On the stream's thread. After a failure the step's remaining buckets are
// skipped, and fail saying so: every rank fails the same way (a mismatch,
// non-finite input) or the stream is poisoned anyway.
void BucketReducer::reduce(Communicator& comm, std::size_t bucket, const BucketWork& work) {
  {
    std::lock_guard lock(mutex_);
    if (failed_) {
      throw CommError("bucket " + std::to_string(bucket) + " not reduced: bucket " +
                      std::to_string(*failed_) + " failed earlier in this step");
    }
  }
  PhaseTimes phases;
  CollectiveOptions options = options_;
  options.phases = &phases;
  const auto faults_before = thread_minor_faults();
  const auto start = Clock::now();
  try {
    if (work.support && work.support->has_value()) {
      work.codec->allreduce_mean_sparse(comm, work.data, **work.support, options);
    } else {
      work.codec->allreduce_mean(comm, work.data, options);
    }
  } catch (...) {
    std::lock_guard lock(mutex_);
    if (!failed_) failed_ = bucket;
    throw;
  }
  const auto end = Clock::now();
  const auto faults = thread_minor_faults() - faults_before;
  std::lock_guard lock(mutex_);
  spans_[bucket] = ClockSpan{start, end};
  phases_[bucket] = phases;
  faults_[bucket] = faults;
}

Work BucketReducer::work(std::size_t bucket) const {
  std::lock_guard lock(mutex_);
  return bucket < works_.size() ? works_[bucket] : Work();
}

namespace {

// Whether `caught` is the failure the operation of `work` stored (rethrown
// by wait), rather than an error of the wait itself.
bool is_stored_failure(const Work& work, const std::exception& caught) {
  const std::exception_ptr stored = work.exception();
  if (!stored) return false;
  try {
    std::rethrow_exception(stored);
  } catch (const std::exception& e) {
    return &e == &caught;
  } catch (...) {
  }
  return false;
}

}  // namespace

// After finish() gave up on a bucket: the step ends if no bucket is still
// inside a collective (its Work::wait waited for the cancelled one to stop).
void BucketReducer::end_step_if_idle(std::size_t count) {
  std::lock_guard lock(mutex_);
  for (std::size_t b = 0; b < count; ++b) {
    if (works_[b].valid() && !works_[b].completed()) return;
  }
  active_ = false;
}

void BucketReducer::finish(Timeout timeout) {
  std::size_t count = 0;
  {
    std::lock_guard lock(mutex_);
    if (!active_) throw InvalidArgument("bucket reducer: finish() without begin()");
    count = buckets_.size();
  }
  const auto deadline = Clock::now() + timeout;
  std::exception_ptr first_failure;
  for (std::size_t b = 0; b < count; ++b) {
    Work launched;
    {
      std::unique_lock lock(mutex_);
      launched_.wait_until(lock, deadline, [&] { return works_[b].valid(); });
      launched = works_[b];
    }
    if (!launched.valid()) {
      // The step stays active: earlier buckets may still be inside a collective.
      throw TimeoutError("bucket reducer: bucket " + std::to_string(b) + " of " +
                         std::to_string(count) + " not reduced after " +
                         std::to_string(timeout.count()) + " ms (it was never marked ready)");
    }
    try {
      launched.wait(time_left(deadline));
    } catch (const TimeoutError& e) {
      if (is_stored_failure(launched, e)) {  // the bucket's own collective timed out
        if (!first_failure) first_failure = std::current_exception();
        continue;
      }
      end_step_if_idle(count);
      throw TimeoutError("bucket reducer: bucket " + std::to_string(b) + " of " +
                         std::to_string(count) + " not reduced after " +
                         std::to_string(timeout.count()) +
                         " ms (it was marked ready: a peer is late or gone): " + e.what());
    } catch (...) {
      if (!first_failure) first_failure = std::current_exception();
    }
  }
  {
    std::lock_guard lock(mutex_);
    active_ = false;
  }
  if (first_failure) std::rethrow_exception(first_failure);
}

std::vector<ClockSpan> BucketReducer::spans() const {
  std::lock_guard lock(mutex_);
  return spans_;
}

std::optional<std::size_t> BucketReducer::failed_bucket() const {
  std::lock_guard lock(mutex_);
  return failed_;
}

std::vector<PhaseTimes> BucketReducer::phase_times() const {
  std::lock_guard lock(mutex_);
  return phases_;
}

std::vector<std::uint64_t> BucketReducer::minor_faults() const {
  std::lock_guard lock(mutex_);
  return faults_;
}

}  // namespace qccl
