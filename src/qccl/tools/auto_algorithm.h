// `--algo auto` in `qccl bench` and `qccl train`: resolves to the algorithm
// the host-link model (scheduling/algorithm_choice.h) predicts fastest for
// the run's message size, its communicator's hosts and its codec, with the
// coefficients of `--model FILE` or the built-in ones measured here, and
// says on rank 0's log which it took and why.
#pragma once

#include <ostream>
#include <string>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"

namespace qccl::tools {

inline constexpr const char* kAutoAlgorithm = "auto";

struct AutoAlgorithmQuery {
  double bytes = 0;        // fp32 bytes of one allreduce's vector
  std::string codec;       // codec spec; "" or "fp32": the plain fp32 sum
  std::string model_path;  // qccl model --scaling --output FILE; "": built in
  bool hierarchical_allowed = true;  // false: the caller cannot run it
};

// Collective over `comm` (it discovers the hosts). Every rank computes the
// same choice from the same inputs; rank 0 writes the reason to `log`.
Algorithm resolve_auto_algorithm(Communicator& comm, const AutoAlgorithmQuery& query,
                                 std::ostream& log);

}  // namespace qccl::tools
