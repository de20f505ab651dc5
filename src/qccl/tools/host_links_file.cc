#include "qccl/tools/host_links_file.h"

#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "qccl/scheduling/algorithm_choice.h"

namespace qccl::tools {

nlohmann::json host_links_json(const HostLinkParams& links) {
  return {{"network_alpha_s", links.network_alpha},
          {"network_beta_bytes_per_s", links.network_beta},
          {"local_alpha_s", links.local_alpha},
          {"local_beta_bytes_per_s", links.local_beta}};
}

HostLinkParams read_host_links(const std::string& path) {
  const std::string fix = "; write one with qccl model --scaling DIR --output FILE";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_whole_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgument("--model '" + path + "' is not valid JSON (" + e.what() + ")" + fix);
  }
  if (!j.contains("host_links") || !j["host_links"].is_object()) {
    throw InvalidArgument("--model '" + path + "' has no \"host_links\" object" + fix);
  }
  const auto& h = j["host_links"];
  const auto number = [&](const char* key) {
    if (!h.contains(key) || !h[key].is_number() || h[key].get<double>() < 0) {
      throw InvalidArgument("--model '" + path + "': host_links." + key +
                            " must be a number >= 0" + fix);
    }
    return h[key].get<double>();
  };
  HostLinkParams links{number("network_alpha_s"), number("network_beta_bytes_per_s"),
                       number("local_alpha_s"), number("local_beta_bytes_per_s")};
  if (!(links.network_beta > 0) || !(links.local_beta > 0)) {
    throw InvalidArgument("--model '" + path + "': the bandwidths must be positive" + fix);
  }
  return links;
}

HostLinkParams host_links_or_measured(const std::string& path) {
  return path.empty() ? measured_host_links() : read_host_links(path);
}

}  // namespace qccl::tools
