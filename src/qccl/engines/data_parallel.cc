#include "qccl/engines/data_parallel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/broadcast.h"
#include "qccl/collectives/collective_call.h"
#include "qccl/common/errors.h"
#include "qccl/engines/archive_bytes.h"

namespace qccl::engines {
namespace {

std::vector<std::size_t> element_counts(const std::vector<NamedTensor>& parameters) {
  std::vector<std::size_t> counts;
  for (const auto& [name, p] : parameters) {
    if (p.scalar_type() != torch::kFloat || !p.is_contiguous() || !p.device().is_cpu()) {
      throw InvalidArgument("data-parallel engine: parameter '" + name +
                            "' must be a contiguous fp32 CPU tensor");
    }
    counts.push_back(static_cast<std::size_t>(p.numel()));
  }
  if (counts.empty()) throw InvalidArgument("data-parallel engine: the model has no parameters");
  return counts;
}

float* data_of(const torch::Tensor& t) { return t.data_ptr<float>(); }

// Copies n floats and tells whether they are all finite, in one pass: a
// float is NaN or ±Inf exactly when its exponent bits are all ones.
bool copy_and_check_finite(float* to, const float* from, std::size_t n) {
  std::uint32_t exponent_all_ones = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, from + i, sizeof bits);
    to[i] = from[i];
    exponent_all_ones |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return exponent_all_ones == 0;
}

// `span` in seconds since `origin`.
OracleInterval seconds_from(Clock::time_point origin, const ClockSpan& span) {
  return {seconds_between(origin, span.start), seconds_between(origin, span.end)};
}

}  // namespace

DataParallelEngine::DataParallelEngine(Communicator& comm, std::vector<NamedTensor> parameters,
                                       EngineOptions options)
    : comm_(comm),
      options_(std::move(options)),
      parameters_(std::move(parameters)),
      reducer_(comm, options_.collective) {
  offer_exchange_counters(this);
  offer_bucketed_exchange(this);
  if (!options_.policy) options_.policy = std::make_shared<SizeCappedPolicy>();
  for (const auto& [name, p] : parameters_) tensors_.push_back(p);
  seen_.assign(parameters_.size(), 0);
  sparse_.assign(parameters_.size(), 0);
  tensor_rows_.resize(parameters_.size());
  ready_seconds_.assign(parameters_.size(), std::nan(""));
  build_buckets(0);
  check_layout_agrees();
  for (std::size_t t = 0; t < parameters_.size(); ++t) {
    hook_ids_.push_back(parameters_[t].second.register_hook(
        [this, t](const torch::Tensor& grad) { on_gradient(t, grad); }));
  }
}

void DataParallelEngine::build_buckets(std::uint64_t codec_step) {
  plan_ = options_.policy->plan(element_counts(parameters_));
  codecs_.clear();
  buckets_.clear();
  bucket_tensors_.clear();
  snapshot_.clear();
  elements_ = 0;
  wants_feedback_ = false;
  for (std::size_t b = 0; b < plan_.bucket_count(); ++b) {
    codecs_.push_back(make_codec(options_.codec, CodecSettings{options_.seed, b}));
    codecs_.back()->set_step(codec_step);
    // The bucket's tensors by name and shape (IntSGD takes a scale per
    // tensor, Algorithm 2's blocks), their state in the shared store.
    std::vector<std::string> names;
    std::vector<std::vector<std::int64_t>> shapes;
    bucket_tensors_.emplace_back();
    for (const std::size_t t : plan_.buckets[b]) {
      names.push_back(parameters_[t].first);
      shapes.push_back(parameters_[t].second.sizes().vec());
      bucket_tensors_.back().push_back(parameters_[t].second);
    }
    codecs_.back()->set_layout(TensorLayout::of_shapes(names, shapes), codec_state_);
    wants_feedback_ = wants_feedback_ || codecs_.back()->step_feedback() != nullptr;
    buckets_.emplace_back(plan_.bucket_elements[b], 0.0f);
    elements_ += plan_.bucket_elements[b];
  }
  supports_.assign(plan_.bucket_count(), std::nullopt);
  pending_.assign(plan_.bucket_count(), 0);
  zero_stays_zero_ = codecs_.front()->traits().zero_stays_zero;
  std::vector<std::size_t> rows, row_elements;
  for (const auto& [name, p] : parameters_) {
    rows.push_back(p.dim() == 0 ? 1 : static_cast<std::size_t>(p.size(0)));
    row_elements.push_back(static_cast<std::size_t>(p.numel()) / std::max<std::size_t>(rows.back(), 1));
  }
  rows_.reset(std::move(rows), std::move(row_elements));  // fresh buckets: all zero
}

void DataParallelEngine::replan(std::shared_ptr<const BucketPolicy> policy) {
  if (!policy) throw InvalidArgument("data-parallel engine: replan() needs a bucket policy");
  {
    std::lock_guard lock(mutex_);
    if (in_step_) throw InvalidArgument("data-parallel engine: replan() inside a step; call it between steps");
  }
  const std::uint64_t codec_step = codecs_.empty() ? 0 : codecs_.front()->step();
  options_.policy = std::move(policy);
  build_buckets(codec_step);
  check_layout_agrees();
}

DataParallelEngine::~DataParallelEngine() {
  for (std::size_t t = 0; t < hook_ids_.size(); ++t) {
    parameters_[t].second.remove_hook(hook_ids_[t]);
  }
}

// Every rank must reduce the same buckets with the same codec: compared as
// one checked call before the first step, so a rank with another model or
// codec fails at once on every rank instead of hanging in a collective.
void DataParallelEngine::check_layout_agrees() {
  Fingerprint fingerprint("data-parallel layout");
  fingerprint.add("parameter tensors", static_cast<std::int64_t>(parameters_.size()))
      .add("parameter elements", static_cast<std::int64_t>(elements_))
      .add("bucket layout", static_cast<std::int64_t>(plan_.fingerprint() >> 2))
      .add_text("bucket policy", options_.policy->name())
      .add_text("codec", codecs_.front()->spec())
      .add_text("algorithm", to_string(options_.collective.algorithm));
  run_collective(comm_, fingerprint, comm_.timeout(options_.collective.timeout), [](int) {});
}

void DataParallelEngine::broadcast_from_root(std::vector<torch::Tensor> buffers) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> tensors;
  for (const auto& [name, p] : parameters_) tensors.push_back(p);
  for (auto& b : buffers) {
    if (b.scalar_type() == torch::kFloat && b.is_contiguous()) tensors.push_back(b);
  }
  std::size_t total = 0;
  for (const auto& t : tensors) total += static_cast<std::size_t>(t.numel());
  std::vector<float> flat(total);
  std::size_t at = 0;
  for (const auto& t : tensors) {
    std::memcpy(flat.data() + at, data_of(t), sizeof(float) * static_cast<std::size_t>(t.numel()));
    at += static_cast<std::size_t>(t.numel());
  }
  broadcast(comm_, flat, 0, options_.collective);
  at = 0;
  for (auto& t : tensors) {
    std::memcpy(data_of(t), flat.data() + at, sizeof(float) * static_cast<std::size_t>(t.numel()));
    at += static_cast<std::size_t>(t.numel());
  }
}

void DataParallelEngine::begin_step() {
  std::vector<BucketWork> work;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    work.emplace_back(codecs_[b].get(), buckets_[b]);
    work.back().support = &supports_[b];
  }
  std::lock_guard lock(mutex_);
  if (in_step_) throw InvalidArgument("data-parallel engine: begin_step() twice without finish_step()");
  for (auto& [name, p] : parameters_) p.mutable_grad() = torch::Tensor();
  std::fill(seen_.begin(), seen_.end(), 0);
  std::fill(sparse_.begin(), sparse_.end(), 0);
  rows_.begin_step();
  finite_ = true;
  std::fill(ready_seconds_.begin(), ready_seconds_.end(), std::nan(""));
  for (std::size_t b = 0; b < buckets_.size(); ++b) pending_[b] = plan_.buckets[b].size();
  step_start_ = Clock::now();
  reducer_.begin(std::move(work));
  in_step_ = true;
}

// Runs inside backward, once per parameter per step, with the parameter's
// whole gradient (autograd sums every use of a leaf before its hooks run):
// dense, or sparse rows (an embedding with sparse gradients).
void DataParallelEngine::on_gradient(std::size_t tensor, const torch::Tensor& grad) {
  const auto& name = parameters_[tensor].first;
  const bool rows = grad.is_sparse() && grad.sparse_dim() == 1 &&
                    grad.sizes() == parameters_[tensor].second.sizes();
  if (grad.scalar_type() != torch::kFloat || (grad.is_sparse() && !rows)) {
    throw InvalidArgument("data-parallel engine: gradient of '" + name +
                          "' is neither a dense fp32 tensor nor fp32 rows of a sparse one");
  }
  const auto g = grad.is_sparse() ? grad.coalesce() : grad.contiguous();
  const auto place = plan_.places[tensor];
  std::lock_guard lock(mutex_);
  if (!in_step_) {
    throw InvalidArgument("data-parallel engine: gradient of '" + name +
                          "' outside a step; call begin_step() before backward()");
  }
  if (seen_[tensor]) {
    throw InvalidArgument("data-parallel engine: a second gradient of '" + name +
                          "' in one step; call backward() once per step");
  }
  seen_[tensor] = 1;
  ready_seconds_[tensor] = seconds_since(step_start_);
  if (g.is_sparse()) {
    place_sparse_gradient(tensor, g);
  } else {
    rows_.set_dense(tensor);
    finite_ = copy_and_check_finite(buckets_[place.bucket].data() + place.offset,
                                    g.data_ptr<float>(), static_cast<std::size_t>(g.numel())) &&
              finite_;
  }
  if (--pending_[place.bucket] == 0) bucket_ready(place.bucket);
}

// Coalesced rows (sorted, each once): the region is cleared — only the
// rows the last step left non-zero, when they are known — and each row
// copied to its place.
void DataParallelEngine::place_sparse_gradient(std::size_t tensor, const torch::Tensor& grad) {
  const auto& p = parameters_[tensor].second;
  const auto place = plan_.places[tensor];
  if (p.size(0) > std::numeric_limits<std::uint32_t>::max()) {
    throw InvalidArgument("data-parallel engine: '" + parameters_[tensor].first + "' has " +
                          std::to_string(p.size(0)) + " rows; sparse gradients take at most 2^32 - 1 "
                          "(split the table, or make its gradient dense)");
  }
  const auto row = static_cast<std::size_t>(p.numel() / std::max<std::int64_t>(p.size(0), 1));
  rows_.clear_region(tensor, std::span(buckets_[place.bucket].data() + place.offset,
                                       static_cast<std::size_t>(p.numel())));
  const auto indices = grad._indices();
  const auto values = grad._values().contiguous();
  const std::int64_t* rows = indices.data_ptr<std::int64_t>();
  const float* from = values.data_ptr<float>();
  auto& ranges = tensor_rows_[tensor];
  ranges.clear();
  std::vector<std::uint32_t> row_list(static_cast<std::size_t>(indices.size(1)));
  for (std::int64_t k = 0; k < indices.size(1); ++k) {
    row_list[static_cast<std::size_t>(k)] = static_cast<std::uint32_t>(rows[k]);
    const std::size_t first = place.offset + static_cast<std::size_t>(rows[k]) * row;
    finite_ = copy_and_check_finite(buckets_[place.bucket].data() + first,
                                    from + static_cast<std::size_t>(k) * row, row) &&
              finite_;
    if (!ranges.empty() && ranges.back().end() == first) {
      ranges.back().count += row;
    } else {
      ranges.push_back({first, row});
    }
  }
  sparse_[tensor] = 1;
  rows_.set_rows(tensor, std::move(row_list));
}

// The support, when some tensor of the bucket came sparse: its rows'
// ranges, every dense tensor whole; tensors unused this step (zero) left
// out. Sorted by place, adjacent ranges merged.
void DataParallelEngine::bucket_ready(std::size_t bucket) {
  auto& support = supports_[bucket];
  const auto& tensors = plan_.buckets[bucket];
  if (std::none_of(tensors.begin(), tensors.end(), [&](std::size_t t) { return sparse_[t]; })) {
    support.reset();
    reducer_.ready(bucket);
    return;
  }
  if (!support) support.emplace();
  support->clear();
  for (const std::size_t t : tensors) {
    if (sparse_[t]) {
      support->insert(support->end(), tensor_rows_[t].begin(), tensor_rows_[t].end());
    } else if (seen_[t] == 1) {
      const auto count = static_cast<std::size_t>(parameters_[t].second.numel());
      support->push_back({plan_.places[t].offset, count});
    }
  }
  std::sort(support->begin(), support->end(),
            [](const Range& a, const Range& b) { return a.first < b.first; });
  std::size_t kept = 0;
  for (const Range& r : *support) {
    if (kept > 0 && (*support)[kept - 1].end() == r.first) {
      (*support)[kept - 1].count += r.count;
    } else {
      (*support)[kept++] = r;
    }
  }
  support->resize(kept);
  reducer_.ready(bucket);
}

// Parameters that took no part in this step's loss contribute zero (what
// DDP's find_unused_parameters does), so every bucket completes.
void DataParallelEngine::close_step() {
  std::lock_guard lock(mutex_);
  if (!in_step_) throw InvalidArgument("data-parallel engine: finish_step() without begin_step()");
  backward_seconds_ = seconds_since(step_start_);
  for (std::size_t t = 0; t < parameters_.size(); ++t) {
    if (seen_[t]) continue;
    seen_[t] = 2;  // unused: zero, outside any support
    const auto place = plan_.places[t];
    const auto count = static_cast<std::size_t>(parameters_[t].second.numel());
    rows_.clear_region(t, std::span(buckets_[place.bucket].data() + place.offset, count));
    if (--pending_[place.bucket] == 0) bucket_ready(place.bucket);
  }
  in_step_ = false;
}

ReduceTimes DataParallelEngine::finish_step() { return finish_step(PartReady()); }

// One small exchange first tells whether every rank's gradients are
// finite. If so, with `on_part`, the buckets' tensors are handed out as each
// bucket completes (the reducer completes them in index order), so the
// caller's optimizer updates bucket b while bucket b+1 is on the wire. The
// check comes first because a bucket's NonFiniteError arriving after earlier
// buckets were updated would leave a skipped step half taken. If not, the
// step waits for every bucket and raises a NonFiniteError on every rank —
// the codec's own, naming the bucket, when it checks its input, else one
// naming the ranks — whatever the codec.
ReduceTimes DataParallelEngine::finish_step(const PartReady& on_part) {
  close_step();
  ReduceTimes times;
  const auto start = Clock::now();
  const auto deadline = start + options_.timeout;
  const std::uint64_t step = step_++;
  double in_parts = 0;
  try {
    const auto nonfinite = check_gradients_and_exchange_rows();
    if (!nonfinite.empty()) {
      reducer_.finish(time_left(deadline));
      throw NonFiniteError("NaN or Inf in the gradients of rank(s) " + nonfinite);
    }
    if (on_part) {
      try {
        in_parts = hand_out_buckets(on_part, deadline);
      } catch (...) {
        reducer_.finish(time_left(deadline));  // the step's first failure, if a bucket failed
        throw;                                 // else the failure of `on_part`
      }
    }
    reducer_.finish(time_left(deadline));
  } catch (const Error&) {
    const auto b = reducer_.failed_bucket();
    rethrow_with_context("step " + std::to_string(step) +
                         (b ? ", " + describe_bucket(*b) : std::string()) + ": ");
  }
  times.waiting = seconds_since(start) - in_parts;
  times.exchanges = reducer_.spans();
  const auto phases = reducer_.phase_times();
  for (const auto faults : reducer_.minor_faults()) times.communication_faults += faults;
  for (std::size_t b = 0; b < times.exchanges.size(); ++b) {
    times.encode += phases[b].encode;
    times.decode += phases[b].decode;
    times.communicate += times.exchanges[b].seconds() - phases[b].encode - phases[b].decode;
  }
  if (!on_part) {
    for (std::size_t b = 0; b < buckets_.size(); ++b) write_means(b);
  }
  times.sparse_rows = rows_.rows_in_step();
  rows_.step_completed();
  return times;
}

// The check carries each rank's finiteness and the size of its rows'
// message; the rows then move on the same call, so a model without sparse
// gradients pays nothing for them and one with them a single round.
std::string DataParallelEngine::check_gradients_and_exchange_rows() {
  CallStatistics statistics;
  statistics.finite = finite_;
  statistics.per_rank[0] = static_cast<double>(rows_.message_bytes());
  CollectiveCall call(comm_, Fingerprint("data-parallel gradient check"),
                      comm_.timeout(options_.collective.timeout), &statistics);
  if (call.statistics().nonfinite_ranks.empty()) {
    std::vector<std::size_t> sizes;
    for (const auto& values : call.statistics().per_rank) {
      sizes.push_back(static_cast<std::size_t>(values[0]));
    }
    call.move([&](int tag) { rows_.exchange(comm_, tag, sizes, options_.collective); });
  } else {
    call.move([](int) {});
  }
  std::string ranks;
  for (const int r : call.statistics().nonfinite_ranks) {
    ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  }
  return ranks;
}

double DataParallelEngine::hand_out_buckets(const PartReady& on_part, Clock::time_point deadline) {
  double in_parts = 0;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    reducer_.work(b).wait(time_left(deadline));
    write_means(b);
    const auto start = Clock::now();
    on_part(bucket_tensors_[b]);
    in_parts += seconds_since(start);
  }
  return in_parts;
}

// The means go into the .grad that backward left (this rank's own
// gradient, dense and owned by the parameter), without allocating; a
// parameter whose gradient came sparse gets its rows (sparse_means) or a
// dense view of its bucket region (dense optimizers update it as any
// other), and one without a gradient (unused this step) a fresh tensor.
void DataParallelEngine::write_means(std::size_t bucket) {
  torch::NoGradGuard no_grad;
  for (const std::size_t t : plan_.buckets[bucket]) {
    rows_.means_written(t, zero_stays_zero_);
    const auto* rows = rows_.rows_of_step(t);
    if (rows && zero_stays_zero_ && options_.sparse_means) {
      write_rows(t, *rows);
      continue;
    }
    auto& p = parameters_[t].second;
    const auto place = plan_.places[t];
    const auto mean = torch::from_blob(buckets_[place.bucket].data() + place.offset, p.sizes());
    auto& grad = p.mutable_grad();
    if (sparse_[t] || (grad.defined() && grad.is_sparse())) {
      grad = mean;  // a dense view of the bucket, valid until the next begin_step()
    } else if (grad.defined() && grad.is_contiguous() && grad.sizes() == p.sizes()) {
      grad.copy_(mean);
    } else {
      grad = mean.clone();
    }
  }
}

// The rows' means copied out of the bucket (every other row of the mean
// is zero: no rank touched it and the codec keeps zeros) into a coalesced
// sparse tensor, allocated per step: the optimizer may keep it.
void DataParallelEngine::write_rows(std::size_t t, const std::vector<std::uint32_t>& rows) {
  auto& p = parameters_[t].second;
  const auto place = plan_.places[t];
  const auto n = static_cast<std::int64_t>(rows.size());
  const auto width = static_cast<std::size_t>(p.numel() / std::max<std::int64_t>(p.size(0), 1));
  auto indices = torch::empty({1, n}, torch::kInt64);
  auto value_sizes = p.sizes().vec();
  value_sizes[0] = n;
  auto values = torch::empty(value_sizes, torch::kFloat);
  std::int64_t* index = indices.data_ptr<std::int64_t>();
  float* to = values.data_ptr<float>();
  const float* region = buckets_[place.bucket].data() + place.offset;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    index[k] = rows[k];
    std::memcpy(to + k * width, region + rows[k] * width, sizeof(float) * width);
  }
  auto grad = torch::_sparse_coo_tensor_unsafe(indices, values, p.sizes());
  grad._coalesced_(true);
  p.mutable_grad() = grad;
}

// Parameters in bucket layout before the optimizer step; afterwards the
// same buffers receive the update x_{k+1} − x_k, so no step allocates.
void DataParallelEngine::snapshot_parameters() {
  if (!wants_feedback_) return;
  snapshot_.resize(buckets_.size());
  for (std::size_t b = 0; b < buckets_.size(); ++b) snapshot_[b].resize(buckets_[b].size());
  for (std::size_t t = 0; t < parameters_.size(); ++t) {
    const auto& p = parameters_[t].second;
    const auto place = plan_.places[t];
    std::memcpy(snapshot_[place.bucket].data() + place.offset, data_of(p),
                sizeof(float) * static_cast<std::size_t>(p.numel()));
  }
}

void DataParallelEngine::observe_update(double next_step_size) {
  if (!wants_feedback_) return;
  for (std::size_t t = 0; t < parameters_.size(); ++t) {
    const auto& p = parameters_[t].second;
    const auto place = plan_.places[t];
    const float* now = data_of(p);
    float* update = snapshot_[place.bucket].data() + place.offset;
    for (std::int64_t i = 0; i < p.numel(); ++i) update[i] = now[i] - update[i];
  }
  for (std::size_t b = 0; b < codecs_.size(); ++b) {
    if (StepFeedback* feedback = codecs_[b]->step_feedback()) {
      feedback->observe_step(next_step_size, snapshot_[b]);
    }
  }
}

std::vector<torch::Tensor> DataParallelEngine::optimizer_parameters() { return tensors_; }

std::vector<std::size_t> DataParallelEngine::tensor_elements() const {
  return element_counts(parameters_);
}

void DataParallelEngine::compute_gradients(const std::function<torch::Tensor()>& loss,
                                           OracleResult& result) {
  compute_gradients_in_parts(loss, result, PartReady());
}

void DataParallelEngine::compute_gradients_in_parts(const std::function<torch::Tensor()>& loss,
                                                    OracleResult& result,
                                                    const PartReady& on_part) {
  const auto start = Clock::now();
  if (result.timeline_origin == Clock::time_point{}) result.timeline_origin = start;
  const auto origin = result.timeline_origin;
  begin_step();
  auto value = loss();
  value.backward();
  result.compute += seconds_since(start);
  if (std::isnan(result.loss)) result.loss = value.item<double>();  // a step's first oracle
  const auto wait_start = Clock::now();
  double in_parts = 0;
  PartReady timed;
  if (on_part) {
    timed = [&](std::span<const torch::Tensor> part) {
      const auto part_start = Clock::now();
      on_part(part);
      in_parts += seconds_since(part_start);
      result.updates.push_back(seconds_from(origin, ClockSpan{part_start, Clock::now()}));
    };
  }
  try {
    const ReduceTimes times = finish_step(timed);
    result.encode += times.encode;
    result.communicate += times.communicate;
    result.decode += times.decode;
    result.communication_faults += times.communication_faults;
    result.sparse_rows += times.sparse_rows;
    for (const ClockSpan& span : times.exchanges) {
      result.exchanges.push_back(seconds_from(origin, span));
    }
  } catch (...) {
    result.waiting += seconds_since(wait_start) - in_parts;
    throw;
  }
  result.waiting += seconds_since(wait_start) - in_parts;
}

// Per bucket its codec's state and step counter; once, the per-tensor store.
void DataParallelEngine::save(torch::serialize::OutputArchive& archive) const {
  // The layout first: a plan chosen during the run (MergeComp's) is
  // restored before the buckets' codec states are.
  const GroupSizes groups = group_sizes_of(plan_);
  auto sizes = torch::empty({static_cast<std::int64_t>(groups.size())}, torch::kInt64);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    sizes[static_cast<std::int64_t>(g)] = static_cast<std::int64_t>(groups[g]);
  }
  archive.write("buckets.groups", sizes);
  for (std::size_t b = 0; b < codecs_.size(); ++b) {
    archive.write("codec." + std::to_string(b) + ".state", bytes_tensor(codecs_[b]->save_state()));
    archive.write("codec." + std::to_string(b) + ".step",
                  torch::tensor({static_cast<std::int64_t>(codecs_[b]->step())}));
  }
  archive.write("codec.tensor_state", bytes_tensor(codec_state_->save()));
}

void DataParallelEngine::load(torch::serialize::InputArchive& archive) {
  torch::Tensor sizes;
  if (archive.try_read("buckets.groups", sizes) && sizes.numel() > 0) {
    GroupSizes groups;
    for (std::int64_t g = 0; g < sizes.numel(); ++g) {
      const auto size = sizes[g].item<std::int64_t>();
      if (size <= 0) throw InvalidArgument("checkpoint: a bucket group of " + std::to_string(size) + " tensors");
      groups.push_back(static_cast<std::size_t>(size));
    }
    if (groups != group_sizes_of(plan_)) replan(std::make_shared<GroupsPolicy>(groups));
  }
  torch::Tensor store;
  archive.read("codec.tensor_state", store);
  codec_state_->load(bytes_of(store));
  for (std::size_t b = 0; b < codecs_.size(); ++b) {
    torch::Tensor state, codec_step;
    archive.read("codec." + std::to_string(b) + ".state", state);
    archive.read("codec." + std::to_string(b) + ".step", codec_step);
    codecs_[b]->load_state(bytes_of(state));
    codecs_[b]->set_step(static_cast<std::uint64_t>(codec_step.item<std::int64_t>()));
  }
}

CodecStepStats DataParallelEngine::exchange_stats() const {
  CodecStepStats total;
  for (const auto& codec : codecs_) {
    const auto stats = codec->last_step_stats();
    total.integer = total.integer || stats.integer;
    total.largest_sent = std::max(total.largest_sent, stats.largest_sent);
    total.largest_sum = std::max(total.largest_sum, stats.largest_sum);
    total.clipped += stats.clipped;
  }
  return total;
}

double DataParallelEngine::payload_bytes() const {
  double bytes = 0;
  for (std::size_t b = 0; b < codecs_.size(); ++b) {
    bytes += static_cast<double>(codecs_[b]->wire_bytes(plan_.bucket_elements[b]));
  }
  return bytes;
}

std::string DataParallelEngine::describe_bucket(std::size_t bucket) const {
  if (bucket >= plan_.bucket_count()) return "bucket " + std::to_string(bucket);
  const auto& tensors = plan_.buckets[bucket];
  return "bucket " + std::to_string(bucket) + " (" + parameters_[tensors.front()].first +
         (tensors.size() > 1 ? " .. " + parameters_[tensors.back()].first : std::string()) + ")";
}

}  // namespace qccl::engines
