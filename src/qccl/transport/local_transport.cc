#include "qccl/transport/local_transport.h"

#include <algorithm>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

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

// One round of the transport-level allreduce/barrier. The last rank to arrive
// reduces every contribution in rank order into `result` (so the result is
// deterministic and identical on all ranks), then bumps `generation`. The
// result stays valid until the next round completes, which needs every rank to
// arrive again, i.e. after each has copied it out.
struct Rendezvous {
  std::mutex mutex;
  std::condition_variable completed;
  std::uint64_t generation = 0;
  int arrived = 0;
  std::vector<bool> present;
  struct Contribution {
    std::span<const std::byte> data;
    DataType type = DataType::f32;
    ReduceOp op = ReduceOp::sum;
  };
  std::vector<Contribution> contributions;
  std::vector<std::byte> result;
  std::string error;  // mismatch found by the last arriver, raised on all ranks
};

struct LocalWorldState {
  explicit LocalWorldState(int n) : size(n), mailboxes(static_cast<std::size_t>(n)) {
    rendezvous.present.assign(static_cast<std::size_t>(n), false);
    rendezvous.contributions.resize(static_cast<std::size_t>(n));
  }
  const int size;
  std::vector<Mailbox> mailboxes;
  Rendezvous rendezvous;

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
    for (auto& box : mailboxes) {
      std::lock_guard lock(box.mutex);
      box.changed.notify_all();
    }
    std::lock_guard lock(rendezvous.mutex);
    rendezvous.completed.notify_all();
  }
  [[noreturn]] void throw_aborted() {
    throw CommError("in-process transport was aborted: " + reason());
  }
};

}  // namespace detail

namespace {

using detail::LocalWorldState;

std::string recv_description(int source, int tag, std::size_t capacity) {
  return "receive from rank " + std::to_string(source) + " (tag " + std::to_string(tag) +
         ", up to " + std::to_string(capacity) + " bytes)";
}

class CompletedSend final : public Request {
 public:
  CompletedSend(int peer, int tag, std::size_t bytes) : peer_(peer), tag_(tag), bytes_(bytes) {}
  bool test() override { return true; }
  void wait(Timeout) override {}
  std::size_t bytes() const override { return bytes_; }
  std::string describe() const override {
    return "send to rank " + std::to_string(peer_) + " (tag " + std::to_string(tag_) + ", " +
           std::to_string(bytes_) + " bytes)";
  }

 private:
  int peer_, tag_;
  std::size_t bytes_;
};

class LocalRecv final : public Request {
 public:
  LocalRecv(std::shared_ptr<LocalWorldState> world, int rank,
            std::shared_ptr<detail::PostedRecv> state)
      : world_(std::move(world)), rank_(rank), state_(std::move(state)) {}

  // An abandoned receive (its collective threw) is withdrawn, so a later
  // message cannot be written into a buffer that no longer exists.
  ~LocalRecv() override {
    auto& box = mailbox();
    std::lock_guard lock(box.mutex);
    if (!state_->done) {
      auto& posted = box.posted;
      posted.erase(std::remove(posted.begin(), posted.end(), state_), posted.end());
    }
  }

  bool test() override {
    auto& box = mailbox();
    std::lock_guard lock(box.mutex);
    return finished_locked();
  }

  void wait(Timeout timeout) override {
    auto& box = mailbox();
    std::unique_lock lock(box.mutex);
    const auto deadline = Clock::now() + timeout;
    const bool ok = box.changed.wait_until(
        lock, deadline, [&] { return state_->done || world_->aborted.load(); });
    if (!ok) {
      throw TimeoutError(describe() + " on rank " + std::to_string(rank_) +
                         " did not complete within " + to_string(timeout));
    }
    finished_locked();
  }

  std::size_t bytes() const override { return state_->bytes; }
  std::string describe() const override {
    return recv_description(state_->source, state_->tag, state_->buffer.size());
  }

 private:
  detail::Mailbox& mailbox() { return world_->mailboxes[static_cast<std::size_t>(rank_)]; }

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

class LocalTransport final : public Transport {
 public:
  LocalTransport(std::shared_ptr<LocalWorldState> world, int rank)
      : world_(std::move(world)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return world_->size; }
  int max_tag() const override { return INT_MAX; }
  std::string_view name() const override { return "in-process"; }

  RequestPtr isend(int peer, int tag, std::span<const std::byte> data) override {
    check_address(peer, tag, "isend");
    if (world_->aborted.load()) world_->throw_aborted();
    auto& box = world_->mailboxes[static_cast<std::size_t>(peer)];
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
    return std::make_unique<CompletedSend>(peer, tag, data.size());
  }

  RequestPtr irecv(int peer, int tag, std::span<std::byte> buffer) override {
    check_address(peer, tag, "irecv");
    if (world_->aborted.load()) world_->throw_aborted();
    auto state = std::make_shared<detail::PostedRecv>();
    state->source = peer;
    state->tag = tag;
    state->buffer = buffer;
    auto& box = world_->mailboxes[static_cast<std::size_t>(rank_)];
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
    return std::make_unique<LocalRecv>(world_, rank_, std::move(state));
  }

  void allreduce(std::span<std::byte> data, DataType type, ReduceOp op, Timeout timeout) override {
    if (data.size() % size_of(type) != 0) {
      throw InvalidArgument("allreduce: " + std::to_string(data.size()) +
                            " bytes is not a whole number of " + std::string(to_string(type)) +
                            " elements");
    }
    rendezvous(data, type, op, timeout, "allreduce");
  }

  void barrier(Timeout timeout) override {
    rendezvous({}, DataType::i64, ReduceOp::sum, timeout, "barrier");
  }

  void abort(std::string_view reason) noexcept override {
    world_->abort("rank " + std::to_string(rank_) + " aborted: " + std::string(reason));
  }

 private:
  void rendezvous(std::span<std::byte> data, DataType type, ReduceOp op, Timeout timeout,
                  std::string_view what) {
    auto& rv = world_->rendezvous;
    std::unique_lock lock(rv.mutex);
    if (world_->aborted.load()) world_->throw_aborted();
    const std::uint64_t round = rv.generation;
    const auto me = static_cast<std::size_t>(rank_);
    rv.contributions[me] = {data, type, op};
    rv.present[me] = true;
    if (++rv.arrived == world_->size) {
      complete_round(rv);
    } else {
      const bool ok = rv.completed.wait_until(lock, Clock::now() + timeout, [&] {
        return rv.generation != round || world_->aborted.load();
      });
      if (!ok) {
        std::string missing;
        for (int r = 0; r < world_->size; ++r) {
          if (!rv.present[static_cast<std::size_t>(r)]) {
            missing += (missing.empty() ? "" : ", ") + std::to_string(r);
          }
        }
        const std::string message = std::string(what) + " on rank " + std::to_string(rank_) +
                                    " timed out after " + to_string(timeout) +
                                    " waiting for rank(s) " + missing +
                                    " to enter it: check that every rank makes the same calls";
        lock.unlock();
        world_->abort(message);
        throw TimeoutError(message);
      }
      if (rv.generation == round) world_->throw_aborted();
    }
    if (!rv.error.empty()) throw MismatchError(std::string(what) + ": " + rv.error);
    if (!data.empty()) std::memcpy(data.data(), rv.result.data(), data.size());
  }

  // Called by the last rank to arrive, holding the rendezvous lock.
  void complete_round(detail::Rendezvous& rv) {
    rv.error.clear();
    const auto& first = rv.contributions[0];
    for (int r = 1; r < world_->size && rv.error.empty(); ++r) {
      const auto& c = rv.contributions[static_cast<std::size_t>(r)];
      if (c.data.size() != first.data.size() || c.type != first.type || c.op != first.op) {
        rv.error = "rank " + std::to_string(r) + " passed " + std::to_string(c.data.size()) +
                   " bytes of " + std::string(to_string(c.type)) + " with op " +
                   std::string(to_string(c.op)) + " but rank 0 passed " +
                   std::to_string(first.data.size()) + " bytes of " +
                   std::string(to_string(first.type)) + " with op " +
                   std::string(to_string(first.op));
      }
    }
    if (rv.error.empty()) {
      rv.result.assign(first.data.begin(), first.data.end());
      for (int r = 1; r < world_->size; ++r) {
        reduce_into(rv.result, rv.contributions[static_cast<std::size_t>(r)].data, first.type,
                    first.op);
      }
    }
    for (auto& c : rv.contributions) c = {};
    std::fill(rv.present.begin(), rv.present.end(), false);
    rv.arrived = 0;
    ++rv.generation;
    rv.completed.notify_all();
  }

  std::shared_ptr<LocalWorldState> world_;
  int rank_;
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
  return std::make_unique<LocalTransport>(state_, rank);
}

void LocalWorld::abort(std::string_view reason) noexcept { state_->abort(reason); }

void run_in_process(int ranks, const std::function<void(Transport&)>& body) {
  LocalWorld world(ranks);
  std::mutex first_mutex;
  std::exception_ptr first_error;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r, transport = world.transport(r)]() mutable {
      try {
        body(*transport);
      } catch (const std::exception& e) {
        {
          std::lock_guard lock(first_mutex);
          if (!first_error) first_error = std::current_exception();
        }
        world.abort("rank " + std::to_string(r) + " failed: " + e.what());
      } catch (...) {
        {
          std::lock_guard lock(first_mutex);
          if (!first_error) first_error = std::current_exception();
        }
        world.abort("rank " + std::to_string(r) + " failed with a non-standard exception");
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace qccl
