#include "qccl/engines/replica_check.h"

#include <cstdio>
#include <algorithm>
#include <utility>
#include <string>

#include "qccl/common/checksum.h"
#include "qccl/common/errors.h"
#include "qccl/engines/rank_agreement.h"

namespace qccl::engines {
namespace {

std::string hex(std::uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

std::uint64_t parameters_checksum(const std::vector<torch::Tensor>& parameters) {
  std::uint64_t h = kChecksumSeed;
  for (const auto& p : parameters) {
    const auto flat = p.detach().contiguous();
    const auto* data = static_cast<const std::byte*>(flat.data_ptr());
    h = checksum64(std::span(data, static_cast<std::size_t>(flat.nbytes())), h);
  }
  return h;
}

void verify_replicas(Communicator& comm, const std::vector<torch::Tensor>& parameters,
                     std::int64_t step, std::string_view when) {
  const auto mine = static_cast<std::int64_t>(parameters_checksum(parameters));
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
  for (const auto& [checksum, ranks] : groups) {
    text += (text.empty() ? "" : "; ") +
            ("ranks {" + ranks + "} hold checksum " + hex(static_cast<std::uint64_t>(checksum)));
  }
  throw MismatchError("step " + std::to_string(step) + " (" + std::string(when) +
                      "): the replicas' parameters differ: " + text +
                      ". The ranks no longer train one model (a damaged checkpoint, or a bug); "
                      "resume from an earlier checkpoint");
}

}  // namespace qccl::engines
