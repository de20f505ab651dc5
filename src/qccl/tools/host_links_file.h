// The host-link model's coefficients in a JSON file: `qccl model --scaling
// --output model.json` writes them under "host_links"; `--model model.json`
// (bench, train: --algo auto) reads them back.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "qccl/scheduling/host_link_model.h"

namespace qccl::tools {

nlohmann::json host_links_json(const HostLinkParams& links);
// Throws InvalidArgument naming the file and the fix when it cannot be read
// or has no positive "host_links" coefficients.
HostLinkParams read_host_links(const std::string& path);
// The file's coefficients, or measured_host_links() when `path` is empty.
HostLinkParams host_links_or_measured(const std::string& path);

}  // namespace qccl::tools
