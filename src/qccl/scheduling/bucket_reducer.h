// Reduces a step's buckets on a stream (a communicator and a thread of its
// own) while the caller goes on computing (data-parallel training overlaps
// them with backward). Buckets are launched strictly in index order — bucket
// b only after 0..b-1 — whatever order the caller marks them ready in, so
// every rank submits the same operations in the same order (the rule of
// PyTorch's c10d reducer).
//
// Each bucket's reduction is a Work: per-bucket completion is the primitive
// (BucketWork::on_done runs when the bucket is reduced; work(b) waits for
// one); finish() waits for all of them. The caller's communicator stays free
// for other calls while a step runs.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qccl/codecs/codec.h"
#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"
#include "qccl/collectives/stream.h"
#include "qccl/common/duration.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

struct BucketWork {
  BucketWork(Codec* codec_, std::span<float> data_, std::function<void(const Work&)> on_done_ = {})
      : codec(codec_), data(data_), on_done(std::move(on_done_)) {}
  Codec* codec = nullptr;     // this bucket's codec instance (its state persists)
  std::span<float> data;      // replaced by the mean over ranks
  // Runs on the stream's thread once the bucket is reduced (or failed).
  std::function<void(const Work&)> on_done;
  // When it points to ranges (read once the bucket is ready): `data` is
  // zero outside these sorted, disjoint ranges, and the bucket is reduced by
  // Codec::allreduce_mean_sparse (the same result; time in proportion to the
  // non-zeros where the codec has a sparse path). They must stay unchanged
  // until the bucket is reduced.
  const std::optional<std::vector<Range>>* support = nullptr;
};

class BucketReducer {
 public:
  // Splits a stream named `stream` from `comm` (collective: every rank
  // constructs its reducers in the same order).
  BucketReducer(Communicator& comm, CollectiveOptions options = {},
                std::string stream = "gradients");
  BucketReducer(const BucketReducer&) = delete;
  BucketReducer& operator=(const BucketReducer&) = delete;

  // Starts a step. Throws InvalidArgument if one is running or a bucket has
  // no codec.
  void begin(std::vector<BucketWork> buckets);
  // Marks bucket `b` ready (its data is final) and launches every bucket
  // whose turn has come; thread-safe. Throws InvalidArgument for an unknown
  // bucket or one marked twice.
  void ready(std::size_t bucket);
  // Bucket b's Work once launched; an empty handle before.
  Work work(std::size_t bucket) const;
  // Waits until every bucket is reduced and ends the step. Rethrows the
  // first failure (later buckets are skipped on every rank alike); throws
  // TimeoutError naming the first unfinished bucket, and whether it was ever
  // marked ready, after `timeout` (a launched one is then cancelled: its
  // stream is unusable).
  void finish(Timeout timeout);
  // When each bucket of the last step was in its collective, on the stream's
  // thread (both ends the clock's epoch for a bucket that did not run);
  // ClockSpan::seconds() is its time there.
  std::vector<ClockSpan> spans() const;
  // The bucket whose collective failed in the last step, if one did.
  std::optional<std::size_t> failed_bucket() const;
  // Of each bucket's time in its collective, the seconds spent encoding and
  // decoding.
  std::vector<PhaseTimes> phase_times() const;
  // Minor page faults the stream's thread took reducing each bucket of the
  // last step (0 in a steady state: the codecs and collectives reuse their
  // buffers).
  std::vector<std::uint64_t> minor_faults() const;
  // Data bytes the reducer's stream has sent so far.
  std::uint64_t data_bytes_sent() const { return stream_.data_bytes_sent(); }

 private:
  void launch(std::size_t bucket);  // caller holds mutex_
  void end_step_if_idle(std::size_t count);
  void reduce(Communicator& comm, std::size_t bucket, const BucketWork& work);

  CollectiveOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable launched_;
  std::vector<BucketWork> buckets_;
  std::vector<char> ready_;
  std::vector<Work> works_;
  std::vector<ClockSpan> spans_;
  std::vector<PhaseTimes> phases_;
  std::vector<std::uint64_t> faults_;
  std::size_t next_ = 0;
  bool active_ = false;
  std::optional<std::size_t> failed_;
  Stream stream_;  // last: its thread stops before the members above go
};

}  // namespace qccl
QCCL_API_END
