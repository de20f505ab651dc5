// The allreduce model of Global-QSGD §7 with hosts of several ranks behind
// one network card each, for the flat algorithms and the hierarchical one.
//
// §7 models one allreduce as steps·α + wire/β + reduce/γ + codec·δ, each
// rank with a link of its own (perf_model.h). Here n = H·L ranks sit on H
// hosts of L, placed host by host (rank r on host r / L, as mpirun fills
// slots); the L ranks of a host talk over shared memory and share the
// host's one card. The time becomes
//
//   t = s_net·α + card/β + s_loc·α_l + local/β_l + reduce/γ + codec·δ
//
// s_net, card: the steps that cross hosts and the bytes the busiest card
// sends in them; s_loc, local: the steps within a host and the bytes one
// rank moves through shared memory in them; α, β: the network's latency per
// step and one card's bandwidth; α_l, β_l: the same within a host. For a
// vector of S fp32 bytes, Ŝ = S/ρ encoded:
//
//   ring (flat):  s_net = 2(n−1), card = 2(n−1)/n·Ŝ — only the rank at each
//     host's boundary sends across, and the ring's hops are pipelined, so
//     the card's hop sets every step's pace; H = 1: the same as s_loc, local.
//   halving-doubling (flat): round by round, the bytes that the ranks of
//     the busiest host send to other hosts (halving_doubling_traffic.h).
//     For n = 2^k and L = 2^j: s_net = 2·log2 H, card = 2L·(H−1)/H·Ŝ (all
//     L ranks cross at once: the card carries L times the hierarchical
//     algorithm's bytes), s_loc = 2·log2 L, local = 2(L−1)/n·Ŝ.
//   hierarchical: s_loc = 2(L−1), local = 2(L−1)/L·S (fp32 reduce-scatter and
//     allgather in the host); across hosts the L slices of S/L run the
//     between-hosts algorithm on H ranks at once, all through the card:
//     ring s_net = 2(H−1), card = 2(H−1)/H·Ŝ; reduce (H−1)/H·S/L, codec S/L.
//   reduce = (n−1)/n·S and codec = S for the flat algorithms.
//
// With L = 1 the flat forms are perf_model.h's. The terms within a host are
// fitted from a run on one host, the network's from runs on one-rank hosts
// (fit_host_links); γ and δ come from the codec microbenchmarks.
#pragma once

#include <vector>

#include "qccl/collectives/options.h"
#include "qccl/common/export.h"
#include "qccl/scheduling/perf_model.h"

QCCL_API_BEGIN
namespace qccl {

struct HostShape {
  int hosts = 1;
  int ranks_per_host = 1;
  int ranks() const { return hosts * ranks_per_host; }
};

struct HostLinkTerms {
  double network_steps = 0, card_bytes = 0;
  double local_steps = 0, local_bytes = 0;
  double reduce_bytes = 0, codec_bytes = 0;
};

struct HostLinkParams {
  double network_alpha = 0;  // s per step across hosts
  double network_beta = 0;   // bytes/s of one host's card
  double local_alpha = 0;    // s per step within a host
  double local_beta = 0;     // bytes/s one rank moves through shared memory
};

// What a codec adds: its compression ratio ρ = S/Ŝ, hop-reduce speed γ
// (fp32 bytes/s; 0: not counted) and encode + decode time δ per fp32 byte.
struct CodecCost {
  double ratio = 1, gamma = 0, delta = 0;
};

// The terms above for an allreduce of `bytes` fp32 bytes with compression
// ratio `ratio`. `between_hosts` is the hierarchical algorithm's schedule
// across hosts (ring or halving-doubling). Throws InvalidArgument for
// native (MPI's own, unseen) or a shape without ranks.
HostLinkTerms host_link_terms(Algorithm algorithm, HostShape shape, double bytes, double ratio,
                              Algorithm between_hosts = Algorithm::ring);
double predict_host_link_seconds(const HostLinkTerms& terms, const HostLinkParams& links,
                                 const CodecCost& codec);

// The terms of one level as perf_model.h's, to fit its α and β with
// fit_alpha_beta: the network's (steps, card bytes) or the host's.
ModelTerms network_level(const HostLinkTerms& terms);
ModelTerms local_level(const HostLinkTerms& terms);

// One measured allreduce: its terms, its codec's costs and its time.
struct HostLinkSample {
  HostLinkTerms terms;
  CodecCost codec;
  double seconds = 0;
};

// Fits α_l and β_l from `one_host` (H = 1: only local terms) and α and β
// from `one_rank_hosts` (L = 1: only network terms), each by
// fit_alpha_beta. Throws InvalidArgument when either set cannot be fitted
// or holds a sample with the other level's terms.
HostLinkParams fit_host_links(const std::vector<HostLinkSample>& one_host,
                              const std::vector<HostLinkSample>& one_rank_hosts);

}  // namespace qccl
QCCL_API_END
