#include "qccl/collectives/validate.h"

#include <functional>

#include "qccl/collectives/encoding.h"
#include "qccl/common/errors.h"

namespace qccl {

void validate_options(const CollectiveOptions& options, std::string_view operation) {
  if (options.chunk_bytes == 0) {
    throw InvalidArgument(std::string(operation) + ": chunk_bytes must be at least 1");
  }
  if (options.window < 0) {
    throw InvalidArgument(std::string(operation) +
                          ": window must be 0 (automatic) or at least 1, got " +
                          std::to_string(options.window));
  }
  if (options.between_hosts == Algorithm::hierarchical) {
    throw InvalidArgument(std::string(operation) +
                          ": between_hosts must be ring, halving-doubling or native, not "
                          "hierarchical");
  }
  if (options.timeout && options.timeout->count() <= 0) {
    throw InvalidArgument(std::string(operation) + ": timeout must be positive, got " +
                          to_string(*options.timeout));
  }
}

void refuse_hierarchical(const CollectiveOptions& options, std::string_view operation) {
  if (options.algorithm != Algorithm::hierarchical) return;
  throw InvalidArgument(std::string(operation) +
                        ": the hierarchical algorithm runs the fp32 allreduce and codecs' "
                        "operations; run this one through a codec (fp32 for plain means), or "
                        "use ring or halving-doubling");
}

void check_same_length(std::size_t input, std::size_t output, std::string_view operation) {
  if (input != output) {
    throw InvalidArgument(std::string(operation) + ": input has " + std::to_string(input) +
                          " elements but output has " + std::to_string(output) +
                          "; pass buffers of the same length");
  }
}

void check_no_partial_overlap(std::span<const float> input, std::span<const float> output,
                              std::string_view operation) {
  if (input.empty() || output.empty() || input.data() == output.data()) return;
  std::less<const float*> less;
  const bool disjoint = !less(input.data(), output.data() + output.size()) ||
                        !less(output.data(), input.data() + input.size());
  if (!disjoint) {
    throw InvalidArgument(std::string(operation) +
                          ": input and output overlap without being the same buffer; pass the "
                          "same span for in place, or separate buffers");
  }
}

std::size_t checked_granularity(const Encoding& encoding, std::string_view operation) {
  const std::size_t g = encoding.granularity();
  if (g == 0) {
    throw InvalidArgument(std::string(operation) + ": encoding '" + encoding.name() +
                          "' declares granularity 0");
  }
  return g;
}

void require_ring(const CollectiveOptions& options, std::string_view operation) {
  if (options.algorithm != Algorithm::ring) {
    throw InvalidArgument(std::string(operation) + " implements algorithm ring only, got '" +
                          std::string(to_string(options.algorithm)) + "'");
  }
}

}  // namespace qccl
