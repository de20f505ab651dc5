// The built-in coefficients of --algo auto (algorithm_choice.h), fitted by
// `qccl model --scaling results/scaling` to scripts/bench-scaling's
// measurements on the machine of docs/bench.md ("AMD EPYC", 2 vCPUs shared
// by every rank, Debian 12, OpenMPI 4.1.4): the network from the fp32 ring
// on 4 emulated hosts with 100 Mbit/s links (scripts/cluster), the host from
// the fp32 hierarchical allreduce of 2 ranks over shared memory, the codecs
// from `qccl bench codec`. docs/cluster.md, "The scaling model", gives the
// commands and the fit.
#include "qccl/scheduling/algorithm_choice.h"

namespace qccl {

HostLinkParams measured_host_links() {
  HostLinkParams links;
  links.network_alpha = 200.6e-6;  // s per step
  links.network_beta = 9.78e6;     // bytes/s per card: 78% of 100 Mbit/s
  links.local_alpha = 2.4e-6;      // s per step within a host
  links.local_beta = 3.74e9;       // bytes/s one rank moves through shared memory
  return links;
}

std::optional<CodecCost> measured_codec_cost(std::string_view canonical_spec) {
  if (canonical_spec == "fp32") return CodecCost{1, 19.0e9, 0};
  if (canonical_spec == "global-qsgd:bits=8,dither=linear,norm=inf,sparse=off") {
    return CodecCost{1, 69.5e9, 0.126e-9};
  }
  return std::nullopt;
}

}  // namespace qccl
