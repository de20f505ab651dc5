// `qccl codecs`: the catalogue of codecs with their properties and the
// papers' recommended settings (codec_catalogue.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "qccl/tools/codec_catalogue.h"

namespace qccl::tools {

struct CodecsCommand {
  std::vector<std::string> specs;  // empty: the recommended settings
  CatalogueQuery query;
  std::string algorithm = "ring";
  bool json = false;
};

CLI::App* add_codecs(CLI::App& app, CodecsCommand& command);
int run_codecs_command(CodecsCommand& command, int argc, char** argv);

}  // namespace qccl::tools
