// `--algo auto`: the allreduce algorithm the host-link model
// (host_link_model.h) predicts fastest for one call's size, hosts, ranks
// per host and codec, with every candidate's predicted time, so that the
// caller can log which it took and why.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"
#include "qccl/common/export.h"
#include "qccl/scheduling/host_link_model.h"

QCCL_API_BEGIN
namespace qccl {

struct AlgorithmPrediction {
  Algorithm algorithm = Algorithm::ring;
  double seconds = 0;
};

struct AlgorithmChoice {
  Algorithm algorithm = Algorithm::ring;
  std::vector<AlgorithmPrediction> candidates;  // in the order considered
  // "hierarchical: 12.1 ms predicted (ring 30.2 ms, halving-doubling 18.9 ms)
  // for 64 MiB on 4 hosts x 2 ranks, ratio 4.0"
  std::string reason;
};

struct ChoiceQuery {
  HostShape shape;
  double bytes = 0;  // fp32 bytes of the vector
  CodecCost codec;
  // The codec runs on the hierarchical algorithm (CodecTraits::host_means,
  // or plain fp32); it is a candidate only then and with several hosts of
  // several ranks.
  bool hierarchical_allowed = true;
};

// The candidate with the least predicted time: ring, halving-doubling and,
// where allowed, hierarchical (ring between hosts). Ties go to the earlier.
AlgorithmChoice choose_algorithm(const ChoiceQuery& query, const HostLinkParams& links);

// The hosts of `comm`'s ranks (discover_host_layout with its options'
// ranks_per_host; collective over `comm`). Hosts of unequal size give
// `uniform` false and a shape of one-rank hosts.
struct CommunicatorShape {
  HostShape shape;
  bool uniform = true;
};
CommunicatorShape communicator_shape(Communicator& comm);

// Coefficients measured on the machine behind docs/cluster.md ("AMD EPYC",
// 2 vCPUs, Debian 12, OpenMPI 4.1.4): shared memory between the ranks of one
// host, and emulated hosts joined by 100 Mbit/s links (scripts/cluster). Run
// `qccl model --scaling` on your own measurements for others.
HostLinkParams measured_host_links();
// The hop-reduce speed γ and encode + decode time δ measured on the same
// machine (qccl bench codec) for the plain fp32 sum ("fp32") and Global-QSGD
// 8-bit ("global-qsgd:bits=8,dither=linear,norm=inf,sparse=off", the canonical
// spec); nullopt for other codecs. The ratio is left 1.
std::optional<CodecCost> measured_codec_cost(std::string_view canonical_spec);

}  // namespace qccl
QCCL_API_END
