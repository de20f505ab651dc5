#include "qccl/transport/local_transport.h"

#include <algorithm>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "qccl/common/counter_rng.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace detail {

struct PostedRecv {
  int source = 0;
  int tag = 0;
  std::span<std::byte> buffer;
  bool done = false;
  std::size_t bytes = 0;
  std::string error;  // non-empty when the receive failed
};

struct Message {
  int source = 0;
  int tag = 0;
  std::vector<std::byte> payload;
};

// Incoming side of one rank: messages that arrived before their receive was
// posted, and receives posted before their message arrived. Both are kept in
// arrival/posting order, which gives MPI's non-overtaking matching.
struct Mailbox {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Message> unexpected;
  std::deque<std::shared_ptr<PostedRecv>> posted;
};

enum class RoundKind { allreduce, reduce_scatter, allgather, barrier };

std::string_view to_string(RoundKind kind) {
  switch (kind) {
    case RoundKind::allreduce: return "allreduce";
    case RoundKind::reduce_scatter: return "reduce-scatter";
    case RoundKind::allgather: return "allgather";
    case RoundKind::barrier: return "barrier";
  }
  return "?";
}

// One rank's part in a round of a transport-level collective.
struct Contribution {
  RoundKind kind = RoundKind::barrier;
  std::span<const std::byte> data;
  DataType type = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  std::vector<std::size_t> counts;  // reduce-scatter: elements per rank; allgather: bytes
};

// One round of the transport-level collectives. The last rank to arrive
// computes the result from every contribution in rank order (so it is
// deterministic and identical on all ranks), then bumps `generation`. The
// result stays valid until the next round completes, which needs every rank
// to arrive again, i.e. after each has copied its part out.
struct Rendezvous {
  std::mutex mutex;
  std::condition_variable completed;
  std::uint64_t generation = 0;
  int arrived = 0;
  std::vector<bool> present;
  std::vector<Contribution> contributions;
  std::vector<std::byte> result;
  // Reduce-scatter: each rank's block, in elements of `result_element` bytes.
  std::vector<std::size_t> result_counts;
  std::size_t result_element = 1;
  std::string error;  // mismatch found by the last arriver, raised on all ranks
  // Set when a rank timed out in a round: that round can never complete, so
  // every rank's rounds on this context fail with it (MPI: a communicator
  // left in an unknown state). Other contexts go on.
  std::string failure;
  // Per rank: why its transport was interrupted (empty: it was not).
  std::vector<std::string> interrupted;
};

// The message space and collectives of one transport and its duplicates'
// counterparts on the other ranks (MPI's communicator).
struct Context {
  explicit Context(int n) : size(n), mailboxes(static_cast<std::size_t>(n)) {
    rendezvous.present.assign(static_cast<std::size_t>(n), false);
    rendezvous.contributions.resize(static_cast<std::size_t>(n));
    rendezvous.interrupted.resize(static_cast<std::size_t>(n));
  }
  const int size;  // ranks on this context: the world's, or a split's
  std::vector<Mailbox> mailboxes;
  Rendezvous rendezvous;
  int released = 0;  // ranks whose transport on this context has ended
};

struct LocalWorldState {
  explicit LocalWorldState(int n) : size(n) {}
  const int size;

  // Contexts by id: 0 is the world's; duplicates and splits derive theirs
  // from their parent's id and how many it made (and a split from its
  // color), so every rank finds the same context without communicating.
  // `ranks`: the context's size (a split's group; the world's otherwise).
  std::shared_ptr<Context> context(std::uint64_t id, int ranks) {
    std::lock_guard lock(contexts_mutex);
    auto& slot = contexts[id];
    if (!slot) slot = std::make_shared<Context>(ranks);
    return slot;
  }
  // A rank's transport on context `id` has ended; once every rank's has, the
  // world forgets the context (requests still holding it keep it alive), so
  // a long run that makes many streams does not accumulate them.
  void release(std::uint64_t id) {
    std::lock_guard lock(contexts_mutex);
    auto it = contexts.find(id);
    if (it != contexts.end() && ++it->second->released == it->second->size) contexts.erase(it);
  }

  std::mutex contexts_mutex;
  std::map<std::uint64_t, std::shared_ptr<Context>> contexts;

  std::mutex abort_mutex;
  std::atomic<bool> aborted{false};
  std::string abort_reason;

  std::string reason() {
    std::lock_guard lock(abort_mutex);
    return abort_reason;
  }
  void abort(std::string_view why) noexcept {
    {
      std::lock_guard lock(abort_mutex);
      if (aborted.load()) return;
      abort_reason = std::string(why);
      aborted.store(true);
    }
    std::lock_guard lock(contexts_mutex);
    for (auto& [id, context] : contexts) {
      for (auto& box : context->mailboxes) {
        std::lock_guard box_lock(box.mutex);
        box.changed.notify_all();
      }
      std::lock_guard rendezvous_lock(context->rendezvous.mutex);
      context->rendezvous.completed.notify_all();
    }
  }
  [[noreturn]] void throw_aborted() {
    throw CommError("in-process transport was aborted: " + reason());
  }
};

}  // namespace detail

namespace {

using detail::Context;
using detail::Contribution;
using detail::LocalWorldState;
using detail::RoundKind;

class CompletedSend final : public Request {
 public:
  CompletedSend(int rank, int peer, int tag, std::size_t bytes)
      : rank_(rank), peer_(peer), tag_(tag), bytes_(bytes) {}
  bool test() override { return true; }
  bool wait_for(Timeout) override { return true; }
  std::size_t bytes() const override { return bytes_; }
  std::string describe() const override {
    return "send to rank " + std::to_string(peer_) + " on rank " + std::to_string(rank_) +
           " (tag " + std::to_string(tag_) + ", " + std::to_string(bytes_) + " bytes)";
  }

 private:
  int rank_, peer_, tag_;
  std::size_t bytes_;
};

class LocalRecv final : public Request {
 public:
  LocalRecv(std::shared_ptr<LocalWorldState> world, std::shared_ptr<Context> context, int rank,
            std::shared_ptr<detail::PostedRecv> state)
      : world_(std::move(world)), context_(std::move(context)),
        box_(context_->mailboxes[static_cast<std::size_t>(rank)]), rank_(rank),
        state_(std::move(state)) {}

  // An abandoned receive (its collective threw) is withdrawn, so a later
  // message cannot be written into a buffer that no longer exists.
  ~LocalRecv() override {
    std::lock_guard lock(box_.mutex);
    if (!state_->done) {
      auto& posted = box_.posted;
      posted.erase(std::remove(posted.begin(), posted.end(), state_), posted.end());
    }
  }

  bool test() override {
    std::lock_guard lock(box_.mutex);
    return finished_locked();
  }

  bool wait_for(Timeout timeout) override {
    std::unique_lock lock(box_.mutex);
    box_.changed.wait_until(lock, Clock::now() + timeout,
                            [&] { return state_->done || world_->aborted.load(); });
    return finished_locked();
  }

  std::size_t bytes() const override { return state_->bytes; }
  std::string describe() const override {
    return "receive from rank " + std::to_string(state_->source) + " on rank " +
           std::to_string(rank_) + " (tag " + std::to_string(state_->tag) + ", up to " +
           std::to_string(state_->buffer.size()) + " bytes)";
  }

 private:
  // Caller holds the mailbox lock.
  bool finished_locked() {
    if (state_->done) {
      if (!state_->error.empty()) throw CommError(state_->error);
      return true;
    }
    if (world_->aborted.load()) world_->throw_aborted();
    return false;
  }

  std::shared_ptr<LocalWorldState> world_;
  std::shared_ptr<Context> context_;  // keeps box_ alive
  detail::Mailbox& box_;
  int rank_;
  std::shared_ptr<detail::PostedRecv> state_;
};

// Copies a message into a posted receive, or records why it does not fit.
void deliver(detail::PostedRecv& recv, std::span<const std::byte> payload, int receiver) {
  if (payload.size() > recv.buffer.size()) {
    recv.error = "message of " + std::to_string(payload.size()) + " bytes from rank " +
                 std::to_string(recv.source) + " (tag " + std::to_string(recv.tag) +
                 ") does not fit the receive buffer of " + std::to_string(recv.buffer.size()) +
                 " bytes on rank " + std::to_string(receiver) +
                 ": the ranks disagree on a message size (different lengths or settings?)";
  } else if (!payload.empty()) {
    std::memcpy(recv.buffer.data(), payload.data(), payload.size());
  }
  recv.bytes = payload.size();
  recv.done = true;
}

// Why the contributions of a round cannot be combined, or "" if they can.
std::string round_mismatch(const std::vector<Contribution>& all) {
  const Contribution& first = all[0];
  for (std::size_t r = 1; r < all.size(); ++r) {
    const Contribution& c = all[r];
    // Allgather contributions differ in size by design; their counts agree.
    const bool same_size = first.kind == RoundKind::allgather || c.data.size() == first.data.size();
    if (c.kind != first.kind || !same_size || c.type != first.type || c.op != first.op ||
        c.counts != first.counts) {
      return "rank " + std::to_string(r) + " entered " + std::string(to_string(c.kind)) +
             " with " + std::to_string(c.data.size()) + " bytes of " +
             std::string(to_string(c.type)) + " (op " + std::string(to_string(c.op)) +
             ") but rank 0 entered " + std::string(to_string(first.kind)) + " with " +
             std::to_string(first.data.size()) + " bytes of " +
             std::string(to_string(first.type)) + " (op " + std::string(to_string(first.op)) +
             ")";
    }
  }
  return {};
}

// The result of a round, from every contribution in rank order: the
// reduction (allreduce, reduce-scatter) or the concatenation (allgather).
std::vector<std::byte> round_result(const std::vector<Contribution>& all) {
  const Contribution& first = all[0];
  std::vector<std::byte> result;
  if (first.kind == RoundKind::allgather) {
    for (const auto& c : all) result.insert(result.end(), c.data.begin(), c.data.end());
    return result;
  }
  result.assign(first.data.begin(), first.data.end());
  for (std::size_t r = 1; r < all.size(); ++r) reduce_into(result, all[r].data, first.type, first.op);
  return result;
}

// Called by the last rank to arrive, holding the rendezvous lock: computes
// the round's result (or the mismatch every rank will raise) and releases
// the waiting ranks.
void complete_round(detail::Rendezvous& rv) {
  rv.error = round_mismatch(rv.contributions);
  if (rv.error.empty()) {
    rv.result = round_result(rv.contributions);
    rv.result_counts = rv.contributions[0].counts;
    rv.result_element = size_of(rv.contributions[0].type);
  }
  for (auto& c : rv.contributions) c = {};
  std::fill(rv.present.begin(), rv.present.end(), false);
  rv.arrived = 0;
  ++rv.generation;
  rv.completed.notify_all();
}

class LocalTransport final : public Transport {
 public:
  LocalTransport(std::shared_ptr<LocalWorldState> world, std::uint64_t context_id, int rank,
                 int size)
      : world_(std::move(world)), context_id_(context_id),
        context_(world_->context(context_id, size)), rank_(rank) {}
  ~LocalTransport() override { world_->release(context_id_); }
  LocalTransport(const LocalTransport&) = delete;
  LocalTransport& operator=(const LocalTransport&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return context_->size; }
  int max_tag() const override { return INT_MAX; }
  std::string_view name() const override { return "in-process"; }

  RequestPtr isend(int peer, int tag, std::span<const std::byte> data) override {
    check_address(peer, tag, "isend");
    if (world_->aborted.load()) world_->throw_aborted();
    auto& box = context_->mailboxes[static_cast<std::size_t>(peer)];
    {
      std::lock_guard lock(box.mutex);
      auto match = std::find_if(box.posted.begin(), box.posted.end(), [&](const auto& r) {
        return r->source == rank_ && r->tag == tag;
      });
      if (match != box.posted.end()) {
        deliver(**match, data, peer);
        box.posted.erase(match);
      } else {
        box.unexpected.push_back({rank_, tag, std::vector<std::byte>(data.begin(), data.end())});
      }
      box.changed.notify_all();
    }
    count_send(data.size());
    return std::make_unique<CompletedSend>(rank_, peer, tag, data.size());
  }

  RequestPtr irecv(int peer, int tag, std::span<std::byte> buffer) override {
    check_address(peer, tag, "irecv");
    if (world_->aborted.load()) world_->throw_aborted();
    auto state = std::make_shared<detail::PostedRecv>();
    state->source = peer;
    state->tag = tag;
    state->buffer = buffer;
    auto& box = context_->mailboxes[static_cast<std::size_t>(rank_)];
    {
      std::lock_guard lock(box.mutex);
      auto match = std::find_if(box.unexpected.begin(), box.unexpected.end(),
                                [&](const auto& m) { return m.source == peer && m.tag == tag; });
      if (match != box.unexpected.end()) {
        deliver(*state, match->payload, rank_);
        box.unexpected.erase(match);
      } else {
        box.posted.push_back(state);
      }
    }
    return std::make_unique<LocalRecv>(world_, context_, rank_, std::move(state));
  }

  void allreduce(std::span<std::byte> data, DataType type, ReduceOp op, Timeout timeout) override {
    if (data.size() % size_of(type) != 0) {
      throw InvalidArgument("allreduce: " + std::to_string(data.size()) +
                            " bytes is not a whole number of " + std::string(to_string(type)) +
                            " elements");
    }
    rendezvous({RoundKind::allreduce, data, type, op, {}}, data, timeout);
  }

  void reduce_scatter(std::span<const std::byte> input, std::span<std::byte> output,
                      std::span<const std::size_t> counts, DataType type, ReduceOp op,
                      Timeout timeout) override {
    check_reduce_scatter_arguments(input.size(), output.size(), counts, type, size(), rank_);
    rendezvous({RoundKind::reduce_scatter, input, type, op, {counts.begin(), counts.end()}},
               output, timeout);
  }

  void allgather(std::span<const std::byte> input, std::span<std::byte> output,
                 std::span<const std::size_t> byte_counts, Timeout timeout) override {
    check_allgather_arguments(input.size(), output.size(), byte_counts, size(), rank_);
    rendezvous({RoundKind::allgather, input, DataType::f32, ReduceOp::sum,
                {byte_counts.begin(), byte_counts.end()}},
               output, timeout);
  }

  void barrier(Timeout timeout) override {
    rendezvous({RoundKind::barrier, {}, DataType::i64, ReduceOp::sum, {}}, {}, timeout);
  }

  std::unique_ptr<Transport> duplicate(Timeout) override {
    const std::uint64_t id = mix64(context_id_ ^ mix64(++duplicates_ + 0x9E3779B97F4A7C15ULL));
    return std::make_unique<LocalTransport>(world_, id, rank_, size());
  }

  // Every rank's (color, key) by an allgather; the ranks of this rank's
  // color, ordered by (key, rank), form the new context.
  std::unique_ptr<Transport> split(int color, int key, Timeout timeout) override {
    if (color < 0) throw InvalidArgument("split: color must be >= 0, got " + std::to_string(color));
    const std::int64_t mine[2] = {color, key};
    std::vector<std::int64_t> all(2 * static_cast<std::size_t>(size()));
    const std::vector<std::size_t> counts(static_cast<std::size_t>(size()), sizeof mine);
    allgather(std::as_bytes(std::span(mine)), std::as_writable_bytes(std::span(all)), counts,
              timeout);
    std::vector<std::pair<std::int64_t, int>> group;  // (key, rank) of this color
    for (int r = 0; r < size(); ++r) {
      if (all[2 * static_cast<std::size_t>(r)] == color) {
        group.emplace_back(all[2 * static_cast<std::size_t>(r) + 1], r);
      }
    }
    std::sort(group.begin(), group.end());
    const auto me = std::find(group.begin(), group.end(), std::pair<std::int64_t, int>(key, rank_));
    const std::uint64_t id = mix64(context_id_ ^ mix64(++duplicates_ + 0x9E3779B97F4A7C15ULL) ^
                                   mix64(static_cast<std::uint64_t>(color) + 1));
    return std::make_unique<LocalTransport>(world_, id, static_cast<int>(me - group.begin()),
                                            static_cast<int>(group.size()));
  }

  int host_key(Timeout /*timeout: nothing to wait for*/) override { return rank_; }

  void interrupt(std::string_view reason) noexcept override {
    auto& rv = context_->rendezvous;
    std::lock_guard lock(rv.mutex);
    auto& mine = rv.interrupted[static_cast<std::size_t>(rank_)];
    if (mine.empty()) mine = reason.empty() ? "interrupted" : std::string(reason);
    rv.completed.notify_all();
  }

  void abort(std::string_view reason, int /*exit_code: no process to end*/) noexcept override {
    world_->abort("rank " + std::to_string(rank_) + " aborted: " + std::string(reason));
  }

 private:
  // Enters a round with `mine`; once every rank has, copies this rank's part
  // of the result into `output`. A rank that leaves a round before it
  // completes (timed out, interrupted, aborted) first withdraws its
  // contribution, which points into its caller's memory.
  void rendezvous(Contribution mine, std::span<std::byte> output, Timeout timeout) {
    const RoundKind kind = mine.kind;
    auto& rv = context_->rendezvous;
    const auto me = static_cast<std::size_t>(rank_);
    std::unique_lock lock(rv.mutex);
    check_round_allowed(kind);
    const std::uint64_t round = rv.generation;
    rv.contributions[me] = std::move(mine);
    rv.present[me] = true;
    if (++rv.arrived == context_->size) {
      complete_round(rv);
    } else {
      rv.completed.wait_until(lock, Clock::now() + timeout, [&] {
        return rv.generation != round || world_->aborted.load() || !rv.failure.empty() ||
               !rv.interrupted[me].empty();
      });
      if (rv.generation == round) leave_round(kind, timeout);
    }
    if (!rv.error.empty()) throw MismatchError(std::string(to_string(kind)) + ": " + rv.error);
    std::span<const std::byte> part = rv.result;
    if (kind == RoundKind::reduce_scatter) {
      const auto& counts = rv.result_counts;
      const std::size_t elem = rv.result_element;
      std::size_t first = 0;
      for (std::size_t r = 0; r < me; ++r) first += counts[r];
      part = part.subspan(first * elem, counts[me] * elem);
    }
    if (!output.empty()) std::memcpy(output.data(), part.data(), output.size());
  }

  // Caller holds the rendezvous lock. Throws if a round may not start.
  void check_round_allowed(RoundKind kind) const {
    const auto& rv = context_->rendezvous;
    if (world_->aborted.load()) world_->throw_aborted();
    const std::string what = std::string(to_string(kind)) + " on rank " + std::to_string(rank_);
    if (!rv.failure.empty()) throw CommError(what + " not started: " + rv.failure);
    const auto& interrupted = rv.interrupted[static_cast<std::size_t>(rank_)];
    if (!interrupted.empty()) {
      throw CommError(what + " not started: the transport was interrupted (" + interrupted + ")");
    }
  }

  // Caller holds the rendezvous lock; the round has not completed. Withdraws
  // this rank's contribution and throws why it left: the world aborted, the
  // context failed, this transport was interrupted, or the wait timed out —
  // then the context fails, so every other rank in the round stops now.
  [[noreturn]] void leave_round(RoundKind kind, Timeout timeout) {
    auto& rv = context_->rendezvous;
    const auto me = static_cast<std::size_t>(rank_);
    std::string missing;
    for (int r = 0; r < context_->size; ++r) {
      if (!rv.present[static_cast<std::size_t>(r)]) {
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
    }
    rv.contributions[me] = {};
    rv.present[me] = false;
    --rv.arrived;
    if (world_->aborted.load()) world_->throw_aborted();
    const std::string what = std::string(to_string(kind)) + " on rank " + std::to_string(rank_);
    if (!rv.failure.empty()) throw CommError(what + " abandoned: " + rv.failure);
    if (!rv.interrupted[me].empty()) {
      throw CommError(what + " abandoned: the transport was interrupted (" + rv.interrupted[me] +
                      ")");
    }
    rv.failure = what + " timed out after " + to_string(timeout) + " waiting for rank(s) " +
                 missing + " to enter it: check that every rank makes the same calls";
    rv.completed.notify_all();
    throw TimeoutError(rv.failure);
  }

  std::shared_ptr<LocalWorldState> world_;
  std::uint64_t context_id_;
  std::shared_ptr<Context> context_;
  int rank_;
  std::uint64_t duplicates_ = 0;
};

}  // namespace

LocalWorld::LocalWorld(int size) {
  if (size < 1) {
    throw InvalidArgument("in-process world needs at least 1 rank, got " + std::to_string(size));
  }
  state_ = std::make_shared<LocalWorldState>(size);
}

int LocalWorld::size() const { return state_->size; }

std::unique_ptr<Transport> LocalWorld::transport(int rank) {
  if (rank < 0 || rank >= state_->size) {
    throw InvalidArgument("in-process world of " + std::to_string(state_->size) +
                          " ranks has no rank " + std::to_string(rank));
  }
  return std::make_unique<LocalTransport>(state_, 0, rank, state_->size);
}

void LocalWorld::abort(std::string_view reason) noexcept { state_->abort(reason); }

std::size_t LocalWorld::context_count() const {
  std::lock_guard lock(state_->contexts_mutex);
  return state_->contexts.size();
}

void run_in_process(int ranks, const std::function<void(Transport&)>& body) {
  LocalWorld world(ranks);
  std::mutex first_mutex;
  std::exception_ptr first_error;
  const auto fail = [&](int rank, const std::string& why) {
    {
      std::lock_guard lock(first_mutex);
      if (!first_error) first_error = std::current_exception();
    }
    world.abort("rank " + std::to_string(rank) + " failed" + why);
  };
  const auto run_rank = [&](int rank, const std::shared_ptr<Transport>& transport) {
    try {
      body(*transport);
    } catch (const std::exception& e) {
      fail(rank, std::string(": ") + e.what());
    } catch (...) {
      fail(rank, " with a non-standard exception");
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    try {
      threads.emplace_back(run_rank, r, std::shared_ptr<Transport>(world.transport(r)));
    } catch (const std::system_error& e) {
      // The machine's thread or memory limit: the ranks already running
      // leave their waits (the world is aborted) and are joined first.
      world.abort("the thread of rank " + std::to_string(r) + " could not start");
      for (auto& t : threads) t.join();
      throw InvalidArgument("in-process world: the thread of rank " + std::to_string(r) + " of " +
                            std::to_string(ranks) + " could not start (" + e.what() +
                            "): the machine's thread limit (ulimit -u, "
                            "/proc/sys/kernel/threads-max) or memory is reached; run fewer "
                            "ranks, or run them as processes under mpirun");
    }
  }
  for (auto& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace qccl
