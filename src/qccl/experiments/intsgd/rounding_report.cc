#include "qccl/experiments/intsgd/rounding_report.h"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "qccl/tools/text_table.h"

namespace qccl::tools {
namespace {

std::string fixed(double value, int digits, bool sign = false) {
  if (!std::isfinite(value)) return "-";
  std::ostringstream text;
  if (sign) text << std::showpos;
  text << std::fixed << std::setprecision(digits) << value;
  return text.str();
}

}  // namespace

std::string mean_sd_text(const Spread& s, double scale, int digits, bool sign) {
  if (s.count == 0) return "-";
  return fixed(scale * s.mean, digits, sign) + " ± " + fixed(scale * s.sd, digits);
}

std::string range_text(const Spread& s, double scale, int digits) {
  if (s.count == 0) return "-";
  return fixed(scale * s.min, digits) + " .. " + fixed(scale * s.max, digits);
}

namespace {

void print_model(std::ostream& out, const RoundingReport& report, const RoundingModelSettings& m) {
  out << m.model << ", " << report.ranks << " ranks: " << m.settings.dump() << "\n";
  const bool accuracy = metric_name_of(m.model) == "accuracy";
  const double scale = accuracy ? 100.0 : 1.0;
  const int digits = 2;
  const std::string metric = accuracy ? "test acc %" : "test ppl";
  TextTable table({{"variant", TextTable::Align::left},
                   {"codec", TextTable::Align::left},
                   {"seeds"},
                   {metric + " (mean ± sd)"},
                   {"min .. max"},
                   {"vs SGD, same seed"},
                   {"test loss"},
                   {"train loss"},
                   {"diverged"}});
  for (const auto& row : report.rows) {
    if (row.model != m.model) continue;
    table.add_row({row.variant, row.codec, std::to_string(row.metric.count),
                   mean_sd_text(row.metric, scale, digits), range_text(row.metric, scale, digits),
                   mean_sd_text(row.metric_vs_sgd, scale, digits, true),
                   mean_sd_text(row.test_loss, 1, 3), mean_sd_text(row.train_loss, 1, 3),
                   std::to_string(row.diverged) + "/" + std::to_string(row.runs)});
  }
  table.print(out);
  out << "\n";
}

}  // namespace

void print_rounding_report(std::ostream& out, const RoundingReport& report) {
  out << "intsgd-rounding: final values after the last step; sd over seeds (n − 1); "
         "\"vs SGD\" is each seed's difference to SGD with the same seed\n";
  if (!report.cpu.empty()) out << "machine: " << report.cpu << "\n";
  out << "\n";
  for (const auto& m : report.models) print_model(out, report, m);
  for (const auto& file : report.files) out << "wrote " << file << "\n";
}

}  // namespace qccl::tools
