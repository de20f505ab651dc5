// `qccl codecs`: the catalogue of codecs a user chooses from. For each
// recommended setting (or each spec given), the properties that decide the
// choice, read from the codec itself: whether it is unbiased, how ranks
// combine it, which collectives it offers, its bits per element on the
// wire and its error bounds, with the paper the setting comes from.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "qccl/collectives/options.h"

namespace qccl::tools {

// What the sizes and bounds are computed for: `elements` per rank, one
// matrix as square as the count divides (codec_bench.h's matrix_layout:
// PowerSGD compresses matrices;
// per-tensor codecs see one tensor), on `ranks` ranks, inputs with
// ‖x‖∞ = 1 and every |x| = 1 (so that ‖x‖²₂,₂, the sum over ranks of
// ‖xᵢ‖², is ranks·elements).
struct CatalogueQuery {
  std::size_t elements = std::size_t{1} << 20;
  int ranks = 4;
  Algorithm algorithm = Algorithm::ring;
};

struct CatalogueRow {
  std::string spec;       // as recommended or given
  std::string canonical;  // every parameter
  std::string source, note;  // empty for a spec given on the command line
  bool unbiased = false;
  std::string aggregation;  // "in transit" or "gathered"
  std::string operations;   // "allreduce, reduce-scatter, allgather"
  double bits_per_element = 0;  // one rank's encoding, 8·wire bytes / elements
  // max |result − mean| over elements for ‖x‖∞ = 1; nullopt: no bound.
  std::optional<double> max_abs_error;
  // The published E‖result − mean‖² bound over ‖x‖²₂,₂; nullopt: none.
  std::optional<double> relative_variance;
};

// The rows of the recommended settings (recommended_settings()), or of
// `specs` when given; InvalidArgument for a spec that does not parse or a
// query outside 1 ≤ ranks ≤ 1024, elements ≥ 1.
std::vector<CatalogueRow> codec_catalogue(const std::vector<std::string>& specs,
                                          const CatalogueQuery& query);

// The table, then where each recommended setting comes from and what it
// needs, then every codec with its parameters.
void print_codec_catalogue(std::ostream& out, const std::vector<CatalogueRow>& rows,
                           const CatalogueQuery& query);
nlohmann::json codec_catalogue_json(const std::vector<CatalogueRow>& rows,
                                    const CatalogueQuery& query);

}  // namespace qccl::tools
