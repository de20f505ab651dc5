#include "qccl/engines/replica_check.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "qccl/common/checksum.h"
#include "qccl/common/errors.h"
#include "qccl/engines/rank_agreement.h"

namespace qccl::engines {

void verify_replicas(Communicator& comm, std::uint64_t checksum, std::int64_t step,
                     std::string_view when) {
  const auto mine = static_cast<std::int64_t>(checksum);
  const auto all = rows_of_ranks(comm, std::span(&mine, 1), "replica check");
  // Groups of ranks with equal checksums, in the order of their first rank.
  std::vector<std::pair<std::int64_t, std::string>> groups;
  for (std::size_t r = 0; r < all.size(); ++r) {
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const auto& g) { return g.first == all[r]; });
    if (group == groups.end()) group = groups.insert(groups.end(), {all[r], ""});
    group->second += (group->second.empty() ? "" : ",") + std::to_string(r);
  }
  if (groups.size() == 1) return;
  std::string text;
  for (const auto& [value, ranks] : groups) {
    text += (text.empty() ? "" : "; ") +
            ("ranks {" + ranks + "} hold checksum " + checksum_text(static_cast<std::uint64_t>(value)));
  }
  throw MismatchError("step " + std::to_string(step) + " (" + std::string(when) +
                      "): the replicas' parameters differ: " + text +
                      ". The ranks no longer train one model (a damaged checkpoint, or a bug); "
                      "resume from an earlier checkpoint");
}

}  // namespace qccl::engines
