#include "qccl/scheduling/host_link_model.h"

#include <string>

#include "qccl/common/errors.h"
#include "qccl/scheduling/halving_doubling_traffic.h"

namespace qccl {
namespace {

// The flat algorithms' network or local terms (see the header).
HostLinkTerms flat_terms(Algorithm algorithm, HostShape shape, double encoded) {
  if (algorithm == Algorithm::halving_doubling) return halving_doubling_traffic(shape, encoded);
  const double n = shape.ranks();
  HostLinkTerms terms;
  const double steps = 2 * (n - 1), bytes = 2 * (n - 1) / n * encoded;
  if (shape.hosts > 1) {
    terms.network_steps = steps;
    terms.card_bytes = bytes;
  } else {
    terms.local_steps = steps;
    terms.local_bytes = bytes;
  }
  return terms;
}

}  // namespace

HostLinkTerms host_link_terms(Algorithm algorithm, HostShape shape, double bytes, double ratio,
                              Algorithm between_hosts) {
  if (shape.hosts < 1 || shape.ranks_per_host < 1) {
    throw InvalidArgument("the model needs at least one host of at least one rank, not " +
                          std::to_string(shape.hosts) + " hosts of " +
                          std::to_string(shape.ranks_per_host));
  }
  if (algorithm == Algorithm::native || between_hosts == Algorithm::native ||
      between_hosts == Algorithm::hierarchical) {
    throw InvalidArgument("the model knows ring, halving-doubling and hierarchical (with ring or "
                          "halving-doubling between hosts), not MPI's own algorithm");
  }
  const double n = shape.ranks(), h = shape.hosts, l = shape.ranks_per_host;
  if (algorithm != Algorithm::hierarchical) {
    HostLinkTerms terms = flat_terms(algorithm, shape, bytes / ratio);
    terms.reduce_bytes = (n - 1) / n * bytes;
    terms.codec_bytes = bytes;
    return terms;
  }
  // The L slices of S/L cross hosts at once through the card: the between-
  // hosts algorithm's card bytes for one slice, L times.
  const HostLinkTerms across = flat_terms(between_hosts, {shape.hosts, 1}, bytes / l / ratio);
  HostLinkTerms terms;
  terms.network_steps = across.network_steps;
  terms.card_bytes = across.card_bytes * l;
  terms.local_steps = 2 * (l - 1);
  terms.local_bytes = 2 * (l - 1) / l * bytes;
  terms.reduce_bytes = (h - 1) / h * bytes / l;
  terms.codec_bytes = bytes / l;
  return terms;
}

double predict_host_link_seconds(const HostLinkTerms& t, const HostLinkParams& links,
                                 const CodecCost& codec) {
  double seconds = t.network_steps * links.network_alpha + t.local_steps * links.local_alpha +
                   t.codec_bytes * codec.delta;
  if (t.card_bytes > 0) seconds += t.card_bytes / links.network_beta;
  if (t.local_bytes > 0) seconds += t.local_bytes / links.local_beta;
  if (codec.gamma > 0) seconds += t.reduce_bytes / codec.gamma;
  return seconds;
}

ModelTerms network_level(const HostLinkTerms& t) {
  return {t.network_steps, t.card_bytes, t.reduce_bytes, t.codec_bytes};
}

ModelTerms local_level(const HostLinkTerms& t) {
  return {t.local_steps, t.local_bytes, t.reduce_bytes, t.codec_bytes};
}

namespace {

// α and β of one level from samples of one codec that have no terms of the
// other level.
ModelParams fit_level(const std::vector<HostLinkSample>& samples, bool network,
                      const char* what) {
  std::vector<ModelSample> level;
  for (const auto& s : samples) {
    const bool other_level = network ? s.terms.local_steps > 0 : s.terms.network_steps > 0;
    if (other_level || s.codec.gamma != samples.front().codec.gamma ||
        s.codec.delta != samples.front().codec.delta) {
      throw InvalidArgument(std::string("fitting ") + what +
                            ": every sample must be of one codec and of that level alone (" +
                            (network ? "one rank per host" : "one host") + ")");
    }
    level.push_back({network ? network_level(s.terms) : local_level(s.terms), s.seconds});
  }
  if (level.empty()) throw InvalidArgument(std::string("fitting ") + what + ": no measurements");
  return fit_alpha_beta(level, samples.front().codec.gamma, samples.front().codec.delta);
}

}  // namespace

HostLinkParams fit_host_links(const std::vector<HostLinkSample>& one_host,
                              const std::vector<HostLinkSample>& one_rank_hosts) {
  const ModelParams local = fit_level(one_host, false, "the terms within a host");
  const ModelParams network = fit_level(one_rank_hosts, true, "the network's terms");
  return {network.alpha, network.beta, local.alpha, local.beta};
}

}  // namespace qccl
