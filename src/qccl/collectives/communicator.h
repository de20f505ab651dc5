// A communicator: the collectives' view of one transport. It assigns each
// collective call its own tag, checks that all ranks made the same call,
// bounds every wait by a timeout, keeps reusable scratch buffers, and once a
// call fails mid-flight it is poisoned: every later call fails at once with
// the original cause, instead of exchanging messages with peers that are in
// an unknown state.
//
// All ranks must call collectives on their communicators in the same order.
// One communicator is driven by one thread at a time. The transport must
// outlive the communicator.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "qccl/collectives/fingerprint.h"
#include "qccl/common/duration.h"
#include "qccl/transport/transport.h"

namespace qccl {

struct CommunicatorOptions {
  // Bound on every wait unless a call overrides it.
  Timeout timeout = std::chrono::seconds(300);
  // Exchange a fingerprint of each call's arguments before moving data, so
  // that ranks that disagree (length, operation, algorithm, reduction, root)
  // get a MismatchError naming the ranks and the field instead of a hang or a
  // wrong result. Costs one small allreduce per call.
  bool check_args = true;
};

enum class Scratch { work, staging };

class Communicator {
 public:
  explicit Communicator(Transport& transport, CommunicatorOptions options = {});

  int rank() const { return transport_.rank(); }
  int size() const { return transport_.size(); }
  Transport& transport() { return transport_; }
  const CommunicatorOptions& options() const { return options_; }
  // A call's timeout: its own override, else the communicator's.
  Timeout timeout(const std::optional<Timeout>& override) const {
    return override.value_or(options_.timeout);
  }
  bool poisoned() const { return !poison_.empty(); }

  // Runs one collective call: fails at once if poisoned; verifies the
  // fingerprint across ranks (when enabled); then calls body(tag) with the
  // call's private tag. A MismatchError from the verification leaves the
  // communicator usable (no data moved); any other failure poisons it.
  void run(const Fingerprint& fingerprint, Timeout timeout,
           const std::function<void(int tag)>& body);

  // Waits for `request`, naming `operation` in the error on failure.
  void wait(Request& request, Timeout timeout, std::string_view operation);

  // A reusable buffer of at least `bytes` bytes, kept across calls so large
  // collectives do not page-fault fresh memory every time.
  std::span<std::byte> scratch(Scratch which, std::size_t bytes);

  // Marks the communicator unusable with `reason`.
  void poison(std::string reason);

 private:
  void verify(const Fingerprint& fingerprint, Timeout timeout);
  [[noreturn]] void report_mismatch(const Fingerprint& fingerprint,
                                    const std::vector<std::int64_t>& mine, Timeout timeout);

  Transport& transport_;
  CommunicatorOptions options_;
  std::uint64_t sequence_ = 0;
  std::string poison_;
  std::vector<std::byte> scratch_[2];
};

}  // namespace qccl
