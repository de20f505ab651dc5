#include "qccl/experiments/output_directory.h"

#include <filesystem>

#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "qccl/engines/rank_agreement.h"

namespace qccl::tools {

void prepare_output_directory(Communicator& comm, const std::string& directory,
                              const std::vector<std::string>& files, const std::string& option) {
  std::string failure;
  if (comm.rank() == 0 && !directory.empty()) {
    try {
      std::error_code error;
      std::filesystem::create_directories(directory, error);
      if (error || !std::filesystem::is_directory(directory)) {
        throw InvalidArgument("cannot create the output directory '" + directory + "': " +
                              error.message());
      }
      for (const auto& file : files) check_can_replace(file, option);
    } catch (const Error& e) {
      failure = e.what();
    }
  }
  if (const auto failed = engines::failures_of_ranks(comm, option, failure); !failed.empty()) {
    throw InvalidArgument(failed + "; choose another " + option);
  }
}

}  // namespace qccl::tools
