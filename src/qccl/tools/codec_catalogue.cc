#include "qccl/tools/codec_catalogue.h"

#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/codecs/registry/recommended_settings.h"
#include "qccl/common/errors.h"
#include "qccl/tools/codec_bench.h"
#include "qccl/tools/codec_help.h"
#include "qccl/tools/text_table.h"

namespace qccl::tools {
namespace {

std::string operations_of(const Codec& codec) {
  std::string list;
  const auto add = [&](CodecOperation op, const char* name) {
    if (codec.supports(op)) list += (list.empty() ? "" : ", ") + std::string(name);
  };
  add(CodecOperation::allreduce_mean, "allreduce");
  add(CodecOperation::reduce_scatter_mean, "reduce-scatter");
  add(CodecOperation::allgather, "allgather");
  return list;
}

// The row of one spec: the codec's traits and its bounds for the query.
CatalogueRow row_of(const std::string& spec, const CatalogueQuery& query) {
  const auto codec = make_codec(spec);
  codec->set_layout(matrix_layout(query.elements));
  const CodecBounds bounds = codec->bounds({.count = query.elements,
                                            .inf_norm = 1.0,
                                            .squared_norm = static_cast<double>(query.ranks) *
                                                            static_cast<double>(query.elements),
                                            .ranks = query.ranks,
                                            .algorithm = query.algorithm});
  CatalogueRow row;
  row.spec = spec;
  row.canonical = codec->spec();
  row.unbiased = codec->unbiased();
  row.aggregation =
      codec->aggregation() == Aggregation::compressed_domain ? "in transit" : "gathered";
  row.operations = operations_of(*codec);
  row.bits_per_element =
      8.0 * static_cast<double>(bounds.wire_bytes) / static_cast<double>(query.elements);
  if (std::isfinite(bounds.max_abs_error)) row.max_abs_error = bounds.max_abs_error;
  if (bounds.variance) row.relative_variance = *bounds.variance / (query.ranks * 1.0 * query.elements);
  return row;
}

// "1024x1024 matrix", or "997-element vector" for a count without divisors.
std::string matrix_shape(std::size_t elements) {
  const auto shape = matrix_layout(elements).tensors(elements).front().shape;
  if (shape.size() < 2) return std::to_string(elements) + "-element vector";
  return std::to_string(shape[0]) + "x" + std::to_string(shape[1]) + " matrix";
}

std::string number(double value, int digits) {
  std::ostringstream out;
  out << std::setprecision(digits) << value;
  return out.str();
}

std::string bound_text(const std::optional<double>& bound) {
  return bound ? number(*bound, 3) : "none";
}

}  // namespace

std::vector<CatalogueRow> codec_catalogue(const std::vector<std::string>& specs,
                                          const CatalogueQuery& query) {
  if (query.ranks < 1 || query.ranks > 1024) {
    throw InvalidArgument("--ranks must be in 1..1024 (the ranks the bounds are for), not " +
                          std::to_string(query.ranks));
  }
  if (query.elements < 1) throw InvalidArgument("--elements must be at least 1");
  std::vector<CatalogueRow> rows;
  if (!specs.empty()) {
    for (const auto& spec : specs) rows.push_back(row_of(spec, query));
    return rows;
  }
  for (const auto& setting : recommended_settings()) {
    auto row = row_of(setting.spec, query);
    row.source = setting.source;
    row.note = setting.note;
    rows.push_back(std::move(row));
  }
  return rows;
}

void print_codec_catalogue(std::ostream& out, const std::vector<CatalogueRow>& rows,
                           const CatalogueQuery& query) {
  using A = TextTable::Align;
  out << "Codecs for one " << matrix_shape(query.elements) << " (" << query.elements
      << " elements) per rank on " << query.ranks << " ranks (" << to_string(query.algorithm)
      << "), inputs with |x| = 1:\n";
  TextTable table({{"spec", A::left},
                   {"unbiased", A::left},
                   {"summed", A::left},
                   {"operations", A::left},
                   {"bits/element"},
                   {"max |error|"},
                   {"E|error|^2 / |x|^2"}});
  for (const auto& r : rows) {
    table.add_row({r.spec, r.unbiased ? "yes" : "no", r.aggregation, r.operations,
                   number(r.bits_per_element, 4), bound_text(r.max_abs_error),
                   bound_text(r.relative_variance)});
  }
  table.print(out);
  out << "summed: in transit (each hop adds encoded chunks) or gathered (every rank decodes every "
         "encoding).\nmax |error|: the bound on |result - mean| of any element; E|error|^2 / |x|^2: "
         "the published variance\nbound over the sum of the ranks' squared norms; none: the codec "
         "has no such bound.\n";
  bool sources = false;
  for (const auto& r : rows) {
    if (r.source.empty()) continue;
    if (!sources) out << "\nWhere each setting comes from:\n";
    sources = true;
    out << "  " << r.spec << ": " << r.source << (r.note.empty() ? "" : "; " + r.note) << "\n";
  }
  out << "\n" << codec_list() << "\n";
}

nlohmann::json codec_catalogue_json(const std::vector<CatalogueRow>& rows,
                                    const CatalogueQuery& query) {
  nlohmann::json out{{"elements", query.elements},
                     {"ranks", query.ranks},
                     {"algorithm", std::string(to_string(query.algorithm))},
                     {"codecs", nlohmann::json::array()}};
  for (const auto& r : rows) {
    const auto optional = [](const std::optional<double>& v) {
      return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
    };
    out["codecs"].push_back({{"spec", r.spec},
                             {"canonical", r.canonical},
                             {"source", r.source},
                             {"note", r.note},
                             {"unbiased", r.unbiased},
                             {"summed", r.aggregation},
                             {"operations", r.operations},
                             {"bits_per_element", r.bits_per_element},
                             {"max_abs_error", optional(r.max_abs_error)},
                             {"relative_variance", optional(r.relative_variance)}});
  }
  return out;
}

}  // namespace qccl::tools
