// Local argument checks shared by the collectives; each throws
// InvalidArgument naming the operation and the fix, before any data moves.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "qccl/collectives/options.h"

namespace qccl {

class Encoding;

void validate_options(const CollectiveOptions& options, std::string_view operation);
void check_same_length(std::size_t input, std::size_t output, std::string_view operation);
// Input and output must be the same span (in place) or not overlap at all.
void check_no_partial_overlap(std::span<const float> input, std::span<const float> output,
                              std::string_view operation);
std::size_t checked_granularity(const Encoding& encoding, std::string_view operation);
// The raw collectives run the hierarchical algorithm for allreduce only
// (codecs run all three operations with it): throws InvalidArgument for
// `operation` (a raw reduce-scatter or allgather) when asked for it.
void refuse_hierarchical(const CollectiveOptions& options, std::string_view operation);
// Only `algorithm` ring is implemented for this operation.
void require_ring(const CollectiveOptions& options, std::string_view operation);

}  // namespace qccl
