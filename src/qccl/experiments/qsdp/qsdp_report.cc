#include "qccl/experiments/qsdp/qsdp_report.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace qccl::tools {
namespace {

// `value` with `digits` decimals and a suffix, or "-" for NaN (no
// reference variant ran).
std::string fixed(double value, int digits, const std::string& suffix = "", bool sign = false) {
  if (!std::isfinite(value)) return "-";
  std::ostringstream text;
  if (sign) text << std::showpos;
  text << std::fixed << std::setprecision(digits) << value << suffix;
  return text.str();
}

// "mean ±spread" of per-seed values ("-" for none; the mean alone for one).
std::string with_spread(const std::vector<double>& values, int digits, const std::string& suffix = "",
                        bool sign = false) {
  const double mean = mean_of(values), spread = spread_of(values);
  if (!std::isfinite(mean)) return "-";
  const auto count = std::count_if(values.begin(), values.end(), [](double v) { return std::isfinite(v); });
  return fixed(mean, digits, suffix, sign) + (count > 1 ? " ±" + fixed(spread, digits) : "");
}

std::string kib(const std::optional<double>& bytes) {
  return bytes ? fixed(*bytes / 1024, 1, " KiB") : std::string("-");
}

void print_settings(std::ostream& out, const QsdpReport& report) {
  const auto& c = report.train;
  const engines::TrainSummary none;
  const auto& first = report.rows.empty() ? none : report.rows.front().summary;
  out << "qsdp: " << c.model << " on " << first.data << ", " << first.engine << " engine, "
      << report.ranks << " ranks, hidden " << c.hidden << ", layers " << c.layers << ", sequence "
      << c.sequence_length << engines::gpt_outliers_text(c) << ", " << first.parameters
      << " parameters, batch " << c.batch
      << " per rank, " << report.steps << " steps, " << c.optimizer << " lr " << c.lr << " betas ("
      << c.beta1 << ", " << c.beta2 << "), seeds";
  for (const auto seed : report.seeds) out << " " << seed;
  out << "\n"
      << "machine: " << report.cpu << "\n\n";
}

void print_table(std::ostream& out, const QsdpReport& report) {
  std::size_t width = 8;
  for (const auto& r : report.rows) width = std::max(width, r.variant.name.size() + 2);
  const int w = static_cast<int>(width);
  out << std::left << std::setw(w) << "variant" << std::right << std::setw(17) << "perplexity"
      << std::setw(17) << "vs base" << std::setw(17) << "Q^w perplexity" << std::setw(17)
      << "Q^w vs base" << std::setw(10) << "ms/step" << std::setw(9) << "compute"
      << std::setw(8) << "wait" << std::setw(8) << "optim" << std::setw(13) << "sent/step"
      << std::setw(9) << "vs fp32" << std::setw(9) << "vs base" << std::setw(11) << "peak RSS"
      << std::setw(8) << "wall s" << "\n";
  for (const auto& r : report.rows) {
    const auto& s = r.summary.split;
    out << std::left << std::setw(w) << r.variant.name << std::right << std::setw(17)
        << with_spread(r.perplexities, 3) << std::setw(17)
        << with_spread(r.relative_percents, 2, "%", true) << std::setw(17)
        << with_spread(r.computed_perplexities, 3) << std::setw(17)
        << with_spread(r.computed_relative_percents, 2, "%", true) << std::setw(10)
        << fixed(r.step_ms, 2) << std::setw(9) << fixed(s.compute * 1e3, 2) << std::setw(8)
        << fixed(s.waiting * 1e3, 2) << std::setw(8) << fixed(s.optimizer * 1e3, 2)
        << std::setw(13) << kib(r.summary.sent_bytes_per_step) << std::setw(9)
        << fixed(r.speedup_vs_fp32, 2, "x") << std::setw(9)
        << fixed(r.speedup_vs_baseline, 2, "x") << std::setw(11)
        << fixed(static_cast<double>(r.summary.peak_rss_bytes) / (1024.0 * 1024.0), 0, " MiB")
        << std::setw(8) << fixed(r.summary.wall_seconds, 1) << "\n";
  }
}

// The blocks' weight matrices' (max − min)/σ_bulk at the end of each
// variant's first seed: where one range per layer (no buckets) costs
// precision.
void print_weight_spreads(std::ostream& out, const QsdpReport& report) {
  out << "\nweights' range over their bulk's sd at the end (the blocks' matrices, seed "
      << report.seeds.front() << "): median, widest\n";
  for (const auto& r : report.rows) {
    const WeightSpread spread = block_weight_spread(r.summary);
    out << "  " << r.variant.name << ": " << fixed(spread.median, 1) << ", "
        << fixed(spread.widest, 1) << "\n";
  }
}

void print_codecs(std::ostream& out, const QsdpReport& report) {
  out << "\ncodecs:\n";
  bool learned = false;
  for (const auto& r : report.rows) {
    out << "  " << r.variant.name << ": weights " << r.variant.weights_codec << ", gradients "
        << r.variant.gradients_codec << "\n";
    learned = learned || r.variant.name.find("learned") != std::string::npos;
  }
  if (learned) {
    const auto at = [&](double times) { return std::llround(times * static_cast<double>(report.refit)); };
    out << "learned levels: fitted at steps " << report.refit << ", " << at(1900.0 / 400) << " and "
        << at(3800.0 / 400) << " (the paper's 400, 1900, 3800 scaled by refit/400, refit "
        << report.refit
        << (report.refit == default_qsdp_refit(report.steps) ? ", the default: steps/12" : "")
        << ")\n";
  }
  for (const auto& r : report.rows) {
    if (r.summary.steps < report.steps) {
      out << "note: " << r.variant.name << " ran " << r.summary.steps << " steps, fewer than "
          << report.steps << " (one pass over the training text at this batch)\n";
    }
  }
}

}  // namespace

void print_qsdp_report(std::ostream& out, const QsdpReport& report) {
  print_settings(out, report);
  print_table(out, report);
  print_codecs(out, report);
  print_weight_spreads(out, report);
  out << "perplexity: on the test text after the last step, of the fp32 master weights; Q^w: of "
         "the weights\nthe model computed with (the weights codec's gather); mean ±sample standard "
         "deviation over the\nseeds; vs base: relative to the baseline's perplexity of the same "
         "seed.\n"
         "ms/step: the training thread's step, the sum of the medians over the steps of its "
         "parts (data, compute,\nwait, optim); vs fp32 and vs base: their ms/step over this "
         "one's. sent/step: bytes rank 0 sent per step.\npeak RSS: the largest of any rank's "
         "process over the training steps; memory an earlier variant freed but the\nprocess "
         "kept still counts (run one variant per invocation to compare memory).\n";
  for (const auto& file : report.files) out << "wrote " << file << "\n";
}

}  // namespace qccl::tools
