#include "qccl/tools/plan_report.h"

#include <iomanip>
#include <ostream>
#include <sstream>

#include "qccl/scheduling/bucket_plan.h"
#include "qccl/tools/units.h"

namespace qccl::tools {

namespace {

// "1,1,1,...,1 (102)" for long lists.
std::string sizes_text(const std::vector<std::size_t>& sizes) {
  std::string text = format_group_sizes(sizes);
  if (text.size() > 40) text = text.substr(0, text.find(',', 30)) + ",...";
  return text;
}

void print_plan(std::ostream& out, const engines::TrainSummary& r) {
  const auto& p = *r.plan;
  const auto ms = [](double s) { return s * 1e3; };
  out << "\n" << r.model << " (" << p.tensors << " tensors, " << r.parameters << " parameters), "
      << r.codec << ", " << r.ranks << " ranks\n"
      << std::fixed << std::setprecision(2) << "profile (medians of " << p.profiled_steps
      << " steps, slowest rank): forward+backward " << ms(p.backward_seconds) << " ms, optimizer "
      << ms(p.optimizer_seconds) << " ms, data " << ms(p.other_seconds) << " ms\n"
      << std::setprecision(3) << "h(x) = " << ms(p.codec_fixed) << " ms + "
      << p.codec_per_element * 1e9 << " ns·x   g(x) = " << ms(p.communication_fixed) << " ms + "
      << p.communication_per_element * 1e9 << " ns·x, of which reductions "
      << p.reduction_per_element * 1e9 << " ns·x   (x in elements; "
      << std::setprecision(2) << p.wire_bytes_per_element << " wire bytes per element, link "
      << format_rate(p.link_bytes_per_second * 8) << ")\n";
  out << std::left << std::setw(11) << "plan" << std::right << std::setw(7) << "groups" << "  "
      << std::left << std::setw(44) << "tensors per group (last layers first)" << std::right
      << std::setw(16) << "predicted ms" << "\n";
  for (const auto& prediction : p.predictions) {
    out << std::left << std::setw(11) << prediction.name << std::right << std::setw(7)
        << prediction.groups.size() << "  " << std::left << std::setw(44)
        << sizes_text(prediction.groups) << std::right << std::setw(16) << std::setprecision(1)
        << ms(prediction.seconds) << "\n";
  }
  out << "best by number of groups (Algorithm 2):";
  for (std::size_t y = 0; y < p.best_by_groups.size(); ++y) {
    out << "  " << y + 1 << ": " << ms(p.best_by_groups[y]) << " ms";
  }
  out << std::defaultfloat << "\ntrain with it: qccl train --model " << r.model << " --codec "
      << r.codec << " --buckets " << r.bucket_policy << "  (or --buckets mergecomp)\n";
}

}  // namespace

void print_plans(std::ostream& out, const std::vector<engines::TrainSummary>& runs) {
  for (const auto& r : runs) {
    if (r.plan) print_plan(out, r);
    else out << "\n" << r.model << ", " << r.codec << ": no plan (the run ended before planning)\n";
  }
}

}  // namespace qccl::tools
