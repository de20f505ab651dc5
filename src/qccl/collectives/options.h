// Per-call options of the collectives, with their defaults.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qccl/common/duration.h"
#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

enum class Algorithm {
  ring,              // reduce-scatter then allgather around a ring, pipelined in chunks
  halving_doubling,  // recursive halving then recursive doubling (any rank count)
  native,            // the transport's own collective (MPI): the uncompressed baseline
  // Two levels (hierarchical.h): fp32 within each host, then the call's
  // reduction across hosts with CollectiveOptions::between_hosts, one rank
  // per host for each 1/L slice: the fp32 allreduce, and every operation of
  // the codecs that compress host means (codec.h).
  hierarchical,
};

// "ring", "halving-doubling", "native" or "hierarchical".
std::string_view to_string(Algorithm algorithm);
// Parses those names, and "tree" for halving-doubling (its former name);
// throws InvalidArgument listing them.
Algorithm parse_algorithm(std::string_view text);
std::vector<std::string> algorithm_names();

// Seconds collectives spent converting to and from their wire format,
// accumulated over calls given the same PhaseTimes (the training engine's
// step-time split), and of that call's communication the seconds spent
// combining received chunks (in-transit reductions: CPU work per element,
// not the link's). The rest of a call's time is communication.
struct PhaseTimes {
  double encode = 0;
  double decode = 0;
  double reduce = 0;  // part of the communication, not of encode or decode
};

struct CollectiveOptions {
  Algorithm algorithm = Algorithm::ring;
  // Algorithm hierarchical: the schedule between hosts (ring,
  // halving-doubling or native).
  Algorithm between_hosts = Algorithm::ring;
  // Bound on every wait of this call; unset: the communicator's timeout.
  std::optional<Timeout> timeout;
  // Largest pipelined message, in bytes of uncompressed fp32 input. Segments
  // of 256 KiB or more are also cut into at least 4 chunks (of >= 64 KiB).
  std::size_t chunk_bytes = std::size_t{1} << 20;
  // Receives in flight at once (each needs a staging buffer of one chunk);
  // 0: automatic, 16 for uncompressed fp32 chunks and 4 for compressed ones
  // (receive_window.h says why).
  int window = 0;
  // Algorithm hierarchical, allreduce: parts of about this many bytes of
  // fp32 input (at most 64 parts), whose steps within the host overlap the
  // exchange of the part before across hosts (host_pipeline.h); 0: one
  // part, the three steps one after the other.
  std::size_t host_part_bytes = std::size_t{2} << 20;
  // Where to add encode and decode times; null: not measured.
  PhaseTimes* phases = nullptr;
};

// Adds the lifetime of the scope to one field of a PhaseTimes (if any).
class PhaseScope {
 public:
  PhaseScope(PhaseTimes* times, double PhaseTimes::*field)
      : times_(times), field_(field), start_(Clock::now()) {}
  ~PhaseScope() {
    if (times_ != nullptr) {
      times_->*field_ += std::chrono::duration<double>(Clock::now() - start_).count();
    }
  }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  PhaseTimes* times_;
  double PhaseTimes::*field_;
  Clock::time_point start_;
};

}  // namespace qccl
QCCL_API_END
