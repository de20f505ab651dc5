#include "qccl/tools/auto_algorithm.h"

#include <algorithm>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/scheduling/algorithm_choice.h"
#include "qccl/tools/host_links_file.h"

namespace qccl::tools {

Algorithm resolve_auto_algorithm(Communicator& comm, const AutoAlgorithmQuery& query,
                                 std::ostream& log) {
  const CommunicatorShape where = communicator_shape(comm);
  ChoiceQuery choice_query;
  choice_query.shape = where.shape;
  choice_query.bytes = query.bytes;
  choice_query.hierarchical_allowed = where.uniform && query.hierarchical_allowed;
  std::string codec_name = "fp32";
  if (!query.codec.empty() && query.codec != "fp32") {
    const auto codec = make_codec(query.codec);
    codec_name = CodecSpec::parse(query.codec).text();
    const std::size_t count = std::max<std::size_t>(1, static_cast<std::size_t>(query.bytes / 4));
    choice_query.codec.ratio =
        4.0 * static_cast<double>(count) / static_cast<double>(codec->wire_bytes(count));
    choice_query.hierarchical_allowed =
        choice_query.hierarchical_allowed && codec->traits().host_means;
  }
  const auto measured = measured_codec_cost(codec_name);
  if (measured) {
    choice_query.codec.gamma = measured->gamma;
    choice_query.codec.delta = measured->delta;
  }
  const AlgorithmChoice choice =
      choose_algorithm(choice_query, host_links_or_measured(query.model_path));
  if (comm.rank() == 0) {
    log << "qccl: --algo auto: " << choice.reason << "; coefficients "
        << (query.model_path.empty() ? "built in (measured on emulated 100 Mbit/s hosts)"
                                     : "from " + query.model_path)
        << (measured ? "" : "; this codec's encode and reduce times not counted") << "\n";
  }
  return choice.algorithm;
}

}  // namespace qccl::tools
