// Reduces a step's buckets on a communication thread while the caller goes
// on computing (data-parallel training overlaps them with backward). Buckets
// are launched strictly in index order — bucket b only after 0..b-1 —
// whatever order the caller marks them ready in, so every rank issues the
// same collectives in the same order (the rule of PyTorch's c10d reducer).
//
// The communicator belongs to the communication thread while a step runs:
// the caller must not use it between begin() and finish().
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "qccl/codecs/codec.h"
#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"

namespace qccl {

struct BucketWork {
  Codec* codec = nullptr;     // this bucket's codec instance (its state persists)
  std::span<float> data;      // replaced by the mean over ranks
};

class BucketReducer {
 public:
  BucketReducer(Communicator& comm, CollectiveOptions options = {});
  ~BucketReducer();
  BucketReducer(const BucketReducer&) = delete;
  BucketReducer& operator=(const BucketReducer&) = delete;

  // Starts a step. Throws InvalidArgument if one is running or a bucket has
  // no codec.
  void begin(std::vector<BucketWork> buckets);
  // Marks bucket `b` ready (its data is final); thread-safe. Throws
  // InvalidArgument for an unknown bucket or one marked twice.
  void ready(std::size_t bucket);
  // Waits until every bucket is reduced and ends the step. Rethrows the
  // first failure (later buckets are skipped); throws TimeoutError naming the
  // first unfinished bucket, and whether it was ever marked ready, after
  // `timeout`.
  void finish(Timeout timeout);
  // Seconds each bucket of the last step spent in its collective.
  std::vector<double> durations() const;
  // The bucket whose collective failed in the last step, if one did.
  std::optional<std::size_t> failed_bucket() const;
  // Of those, the seconds each bucket spent encoding and decoding.
  std::vector<PhaseTimes> phase_times() const;

 private:
  void run();

  Communicator& comm_;
  CollectiveOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<BucketWork> buckets_;
  std::vector<char> ready_;
  std::vector<double> durations_;
  std::vector<PhaseTimes> phases_;
  std::size_t next_ = 0, done_ = 0;
  bool active_ = false, stop_ = false;
  std::exception_ptr error_;
  std::optional<std::size_t> failed_;
  std::thread thread_;  // last: started after every member above exists
};

}  // namespace qccl
