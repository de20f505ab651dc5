#include "qccl/tools/step_timeline.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <ios>
#include <iomanip>
#include <optional>
#include <ostream>
#include <tuple>
#include <utility>

#include "qccl/common/errors.h"
#include "qccl/common/statistics.h"

namespace qccl::tools {
namespace {

using Interval = std::pair<double, double>;

// The [start, end] pairs of `field`, checked: an array of pairs of
// numbers, start <= end.
std::vector<Interval> intervals_of(const nlohmann::json& line, const char* field,
                                   const std::string& where) {
  const auto& list = line.at(field);
  if (!list.is_array()) {
    throw InvalidArgument(where + ": '" + field + "' is " + list.dump() +
                          ", not a list of [start, end] pairs");
  }
  std::vector<Interval> intervals;
  for (const auto& pair : list) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number() || !pair[1].is_number() ||
        pair[0].get<double>() > pair[1].get<double>()) {
      throw InvalidArgument(where + ": '" + field + "' holds " + pair.dump() +
                            ", not a [start, end] pair of seconds");
    }
    intervals.emplace_back(pair[0].get<double>(), pair[1].get<double>());
  }
  return intervals;
}

// One kept step line's timeline.
struct StepSpans {
  double seconds = 0, compute = 0;
  std::vector<Interval> exchanges, updates;
};

// The share of [first start, last end] that some interval covers.
double busy_share(std::vector<Interval> intervals) {
  if (intervals.empty()) return 0;
  std::sort(intervals.begin(), intervals.end());
  double covered = 0, reach = intervals.front().first;  // reach: the latest end so far
  for (const auto& [start, end] : intervals) {
    covered += std::max(0.0, end - std::max(start, reach));
    reach = std::max(reach, end);
  }
  const double span = reach - intervals.front().first;
  return span > 0 ? covered / span : 1.0;
}

enum class Part { start, end, length };

// The median over the steps of one part of interval `i` of `list`.
double median_part(const std::vector<StepSpans>& steps, std::vector<Interval> StepSpans::*list,
                   std::size_t i, Part part) {
  std::vector<double> values;
  for (const auto& s : steps) {
    const auto& [start, end] = (s.*list)[i];
    values.push_back(part == Part::start ? start : part == Part::end ? end : end - start);
  }
  return median(std::move(values));
}

// The median over the steps of a per-step quantity.
template <typename Value>
double median_over(const std::vector<StepSpans>& steps, Value value) {
  std::vector<double> values;
  for (const auto& s : steps) values.push_back(value(s));
  return median(std::move(values));
}

// Medians over the steps, bucket by bucket.
StepTimeline summarise(const std::vector<StepSpans>& steps) {
  StepTimeline t;
  t.steps = steps.size();
  t.step_seconds = median_over(steps, [](const StepSpans& s) { return s.seconds; });
  t.compute_seconds = median_over(steps, [](const StepSpans& s) { return s.compute; });
  t.has_updates = !steps.front().updates.empty();
  for (std::size_t b = 0; b < steps.front().exchanges.size(); ++b) {
    BucketTimeline bucket;
    bucket.exchange_start = median_part(steps, &StepSpans::exchanges, b, Part::start);
    bucket.exchange_end = median_part(steps, &StepSpans::exchanges, b, Part::end);
    bucket.exchange_seconds = median_part(steps, &StepSpans::exchanges, b, Part::length);
    if (t.has_updates) {
      bucket.update_start = median_part(steps, &StepSpans::updates, b, Part::start);
      bucket.update_end = median_part(steps, &StepSpans::updates, b, Part::end);
      bucket.update_seconds = median_part(steps, &StepSpans::updates, b, Part::length);
    }
    t.buckets.push_back(bucket);
  }
  t.tail_seconds = median_over(steps, [](const StepSpans& s) {
    return s.updates.empty() ? 0.0 : s.updates.back().second - s.exchanges.back().second;
  });
  t.exchange_busy_share =
      median_over(steps, [](const StepSpans& s) { return busy_share(s.exchanges); });
  return t;
}

// One step line's spans, checked: some exchanges, and either no updates or
// one per exchange.
StepSpans spans_of(const nlohmann::json& line, const std::string& where) {
  if (!line.contains("exchanges")) {
    throw InvalidArgument(where + ": the step line has no 'exchanges': the timeline is "
                          "written by `qccl train --log` with the data-parallel engine");
  }
  StepSpans spans;
  spans.seconds = line.at("seconds").get<double>();
  spans.compute = line.at("compute").get<double>();
  spans.exchanges = intervals_of(line, "exchanges", where);
  if (line.contains("updates")) spans.updates = intervals_of(line, "updates", where);
  if (spans.exchanges.empty()) throw InvalidArgument(where + ": 'exchanges' is empty");
  if (!spans.updates.empty() && spans.updates.size() != spans.exchanges.size()) {
    throw InvalidArgument(where + ": " + std::to_string(spans.updates.size()) + " updates for " +
                          std::to_string(spans.exchanges.size()) + " exchanges");
  }
  return spans;
}

// Why `spans` cannot join the steps read before it, or empty.
std::string layout_change(const StepSpans& spans, const StepSpans& first) {
  for (const auto& [field, now, before] :
       {std::tuple{"exchanges", spans.exchanges.size(), first.exchanges.size()},
        std::tuple{"updates", spans.updates.size(), first.updates.size()}}) {
    if (now != before) {
      return std::to_string(now) + " " + field + " where earlier steps had " +
             std::to_string(before);
    }
  }
  return {};
}

}  // namespace

// Steps before the log's last MergeComp `plan` line ran with the profiling
// layout: the count, and `skip`, start again after it.
StepTimeline read_step_timeline(const std::string& path, std::size_t skip) {
  std::ifstream in(path);
  if (!in) throw InvalidArgument("cannot read the training log '" + path + "': check the path");
  std::vector<StepSpans> steps;
  std::size_t step_lines = 0;
  std::optional<std::size_t> plan_after_step;
  std::string text;
  for (std::size_t number = 1; std::getline(in, text); ++number) {
    const std::string where = path + ", line " + std::to_string(number);
    try {
      const auto line = nlohmann::json::parse(text);
      const auto event = line.value("event", "");
      if (event == "plan") {
        plan_after_step = line.value("after_step", std::size_t{0});
        steps.clear();
        step_lines = 0;
      }
      if (event != "step" || line.value("skipped", false) || step_lines++ < skip) continue;
      StepSpans spans = spans_of(line, where);
      if (!steps.empty()) {
        if (const auto change = layout_change(spans, steps.front()); !change.empty()) {
          throw InvalidArgument(where + ": " + change + ": the buckets changed; a log has one "
                                "layout, or a MergeComp plan line before the new one");
        }
      }
      steps.push_back(std::move(spans));
    } catch (const nlohmann::json::exception& e) {
      throw InvalidArgument(where + ": not a qccl train log line: " + e.what());
    }
  }
  if (steps.empty()) {
    throw InvalidArgument(path + ": no step left after skipping " + std::to_string(skip) + " of " +
                          std::to_string(step_lines) +
                          (plan_after_step ? " (counted after its MergeComp plan)" : "") +
                          ": lower --skip or log more steps");
  }
  StepTimeline timeline = summarise(steps);
  timeline.skipped = skip;
  timeline.plan_after_step = plan_after_step;
  return timeline;
}

void print_step_timeline(std::ostream& out, const std::string& path, const StepTimeline& t) {
  std::ios format(nullptr);
  format.copyfmt(out);
  const auto ms = [](double s) { return s * 1e3; };
  out << std::fixed << std::setprecision(1) << "timeline of " << path << ": medians of "
      << t.steps << " steps after the first " << t.skipped;
  if (t.plan_after_step) {
    out << " that followed the MergeComp plan made after " << *t.plan_after_step << " steps";
  }
  out << "; ms since the step's forward pass began (rank 0)\n"
      << "step " << ms(t.step_seconds) << " ms, forward+backward " << ms(t.compute_seconds)
      << " ms\n"
      << std::setw(6) << "bucket" << std::setw(16) << "exchange start" << std::setw(8) << "end"
      << std::setw(8) << "length" << std::setw(16) << "update start" << std::setw(8) << "end"
      << std::setw(8) << "length" << "\n";
  for (std::size_t b = 0; b < t.buckets.size(); ++b) {
    const auto& bucket = t.buckets[b];
    out << std::setw(6) << b << std::setw(16) << ms(bucket.exchange_start) << std::setw(8)
        << ms(bucket.exchange_end) << std::setw(8) << ms(bucket.exchange_seconds);
    if (t.has_updates) {
      out << std::setw(16) << ms(bucket.update_start) << std::setw(8) << ms(bucket.update_end)
          << std::setw(8) << ms(bucket.update_seconds);
    }
    out << "\n";
  }
  out << "exchanges ran " << std::setprecision(0) << 100 * t.exchange_busy_share
      << "% of the time from the first one's start to the last one's end";
  if (t.has_updates) {
    out << "; the last update ends " << std::setprecision(1) << ms(t.tail_seconds)
        << " ms after the last exchange";
  }
  out << "\n";
  out.copyfmt(format);
}

}  // namespace qccl::tools
