#include "qccl/experiments/global_qsgd/quality_report.h"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "qccl/experiments/global_qsgd/quality_variants.h"
#include "qccl/experiments/intsgd/rounding_report.h"
#include "qccl/tools/text_table.h"

namespace qccl::tools {
namespace {

// "+40.7%": how much `value` lies above `reference`; "-" when either is
// missing.
std::string percent_above(double value, double reference) {
  if (!std::isfinite(value) || !std::isfinite(reference) || reference == 0) return "-";
  std::ostringstream text;
  text << std::showpos << std::fixed << std::setprecision(1)
       << 100.0 * (value / reference - 1.0) << "%";
  return text.str();
}

const QualityVariant* paper_row(const std::vector<QualityVariant>& all,
                                const std::string& variant) {
  for (const auto& v : all) {
    if (v.run.name == variant) return &v;
  }
  return nullptr;
}

double mean_of_baseline(const RoundingReport& report, const std::string& model) {
  for (const auto& row : report.rows) {
    if (row.model == model && row.variant == report.baseline && row.metric.count > 0) {
      return row.metric.mean;
    }
  }
  return std::nan("");
}

void print_model(std::ostream& out, const RoundingReport& report, const RoundingModelSettings& m) {
  out << m.model << ", " << report.ranks << " ranks: " << m.settings.dump() << "\n";
  TextTable table({{"variant", TextTable::Align::left},
                   {"codec", TextTable::Align::left},
                   {"seeds"},
                   {"test ppl (mean ± sd)", TextTable::Align::right, "here"},
                   {"min .. max", TextTable::Align::right, "here"},
                   {"vs fp32", TextTable::Align::right, "here"},
                   {"vs fp32, same seed", TextTable::Align::right, "here"},
                   {"test loss", TextTable::Align::right, "here"},
                   {"train loss", TextTable::Align::right, "here"},
                   {"diverged", TextTable::Align::right, "here"},
                   {"row", TextTable::Align::left, "Table 4, Transformer-XL"},
                   {"PPL", TextTable::Align::right, "Table 4, Transformer-XL"},
                   {"vs no quant.", TextTable::Align::right, "Table 4, Transformer-XL"}});
  const double base = mean_of_baseline(report, m.model);
  const auto variants = quality_variants();
  const QualityVariant* paper_base = paper_row(variants, "fp32");
  for (const auto& row : report.rows) {
    if (row.model != m.model) continue;
    const QualityVariant* paper = paper_row(variants, row.variant);
    table.add_row({row.variant, row.codec, std::to_string(row.metric.count),
                   mean_sd_text(row.metric, 1, 2), range_text(row.metric, 1, 2),
                   percent_above(row.metric.count ? row.metric.mean : std::nan(""), base),
                   mean_sd_text(row.metric_vs_sgd, 1, 2, true), mean_sd_text(row.test_loss, 1, 3),
                   mean_sd_text(row.train_loss, 1, 3),
                   std::to_string(row.diverged) + "/" + std::to_string(row.runs),
                   paper ? paper->run.label : "-",
                   paper ? mean_sd_text({3, paper->paper_ppl, paper->paper_sd, 0, 0}, 1, 2) : "-",
                   paper ? percent_above(paper->paper_ppl, paper_base->paper_ppl) : "-"});
  }
  table.print(out);
  out << "\n";
}

}  // namespace

void print_quality_report(std::ostream& out, const RoundingReport& report) {
  out << report.experiment
      << ": test perplexity after the last step; sd over seeds (n − 1); \"vs fp32\" compares "
         "the means, \"same seed\" each seed's difference to fp32 with the same seed\n";
  if (!report.cpu.empty()) out << "machine: " << report.cpu << "\n";
  out << "\n";
  for (const auto& m : report.models) print_model(out, report, m);
  for (const auto& file : report.files) out << "wrote " << file << "\n";
}

}  // namespace qccl::tools
