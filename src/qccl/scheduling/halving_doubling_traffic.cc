// Replays the schedule of collectives/halving_doubling.cc on paper: the
// fold (n − p even ranks below 2(n − p) send their vector to the odd rank
// above), log2 p halving rounds (survivor v sends Ŝ·mask/p to survivor
// v ^ mask, mask = p/2 … 1), the same doubling rounds in reverse, and the
// unfold. In each round every sender sends at once, so the round lasts as
// long as its busiest card needs (all of a host's senders to other hosts
// share it) — one network step — or, when no byte leaves any host, as long
// as the largest send through shared memory — one local step.
#include "qccl/scheduling/halving_doubling_traffic.h"

#include <algorithm>
#include <bit>
#include <vector>

namespace qccl {
namespace {

class RoundCounter {
 public:
  RoundCounter(HostShape shape) : shape_(shape), egress_(static_cast<std::size_t>(shape.hosts)) {}

  void send(int from, int to, double bytes) {
    const int from_host = from / shape_.ranks_per_host;
    if (from_host == to / shape_.ranks_per_host) {
      largest_local_ = std::max(largest_local_, bytes);
    } else {
      egress_[static_cast<std::size_t>(from_host)] += bytes;
    }
  }

  // Closes the round: adds its step and bytes to `terms`.
  void end_round(HostLinkTerms& terms) {
    const double card = *std::max_element(egress_.begin(), egress_.end());
    if (card > 0) {
      terms.network_steps += 1;
      terms.card_bytes += card;
    } else if (largest_local_ > 0) {
      terms.local_steps += 1;
      terms.local_bytes += largest_local_;
    }
    std::fill(egress_.begin(), egress_.end(), 0.0);
    largest_local_ = 0;
  }

 private:
  HostShape shape_;
  std::vector<double> egress_;
  double largest_local_ = 0;
};

}  // namespace

HostLinkTerms halving_doubling_traffic(HostShape shape, double encoded_bytes) {
  const int n = shape.ranks();
  const int p = static_cast<int>(std::bit_floor(static_cast<unsigned>(n)));
  const int m = n - p;
  const auto real_rank = [m](int v) { return v < m ? 2 * v + 1 : v + m; };
  HostLinkTerms terms;
  RoundCounter round(shape);
  const auto fold = [&](bool toward_odd) {
    if (m == 0) return;
    for (int i = 0; i < m; ++i) {
      if (toward_odd) {
        round.send(2 * i, 2 * i + 1, encoded_bytes);
      } else {
        round.send(2 * i + 1, 2 * i, encoded_bytes);
      }
    }
    round.end_round(terms);
  };
  const auto exchange_round = [&](int mask) {
    for (int v = 0; v < p; ++v) round.send(real_rank(v), real_rank(v ^ mask), encoded_bytes * mask / p);
    round.end_round(terms);
  };
  fold(true);
  for (int mask = p / 2; mask >= 1; mask /= 2) exchange_round(mask);
  for (int mask = 1; mask < p; mask *= 2) exchange_round(mask);
  fold(false);
  return terms;
}

}  // namespace qccl
