#include "qccl/scheduling/algorithm_choice.h"

#include <cstdio>

#include "qccl/collectives/host_layout.h"

namespace qccl {
namespace {

std::string milliseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g ms", seconds * 1e3);
  return text;
}

std::string describe(const ChoiceQuery& query, const AlgorithmChoice& choice) {
  std::string others;
  double chosen_seconds = 0;
  for (const auto& c : choice.candidates) {
    if (c.algorithm == choice.algorithm) {
      chosen_seconds = c.seconds;
      continue;
    }
    others += (others.empty() ? "" : ", ") + std::string(to_string(c.algorithm)) + " " +
              milliseconds(c.seconds);
  }
  char where[160];
  std::snprintf(where, sizeof where, " for %.4g MB on %d hosts x %d ranks, compression ratio %.3g",
                query.bytes / 1e6, query.shape.hosts, query.shape.ranks_per_host,
                query.codec.ratio);
  return std::string(to_string(choice.algorithm)) + ": " + milliseconds(chosen_seconds) +
         " predicted (" + others + ")" + where;
}

}  // namespace

AlgorithmChoice choose_algorithm(const ChoiceQuery& query, const HostLinkParams& links) {
  std::vector<Algorithm> candidates{Algorithm::ring, Algorithm::halving_doubling};
  if (query.hierarchical_allowed && query.shape.hosts > 1 && query.shape.ranks_per_host > 1) {
    candidates.push_back(Algorithm::hierarchical);
  }
  AlgorithmChoice choice;
  for (Algorithm a : candidates) {
    const auto terms = host_link_terms(a, query.shape, query.bytes, query.codec.ratio);
    choice.candidates.push_back({a, predict_host_link_seconds(terms, links, query.codec)});
  }
  const AlgorithmPrediction* best = &choice.candidates.front();
  for (const auto& c : choice.candidates) {
    if (c.seconds < best->seconds) best = &c;
  }
  choice.algorithm = best->algorithm;
  choice.reason = describe(query, choice);
  return choice;
}

CommunicatorShape communicator_shape(Communicator& comm) {
  const HostLayout layout =
      discover_host_layout(comm.transport(), comm.options().ranks_per_host, comm.options().timeout);
  if (!layout.uniform()) return {{comm.size(), 1}, false};
  return {{layout.hosts(), layout.host_size(0)}, true};
}

}  // namespace qccl
