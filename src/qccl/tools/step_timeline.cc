#include "qccl/tools/step_timeline.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <utility>

#include "qccl/common/errors.h"
#include "qccl/common/statistics.h"

namespace qccl::tools {
namespace {

using Interval = std::pair<double, double>;

// The [start, end] pairs of `field`, checked: numbers, start <= end.
std::vector<Interval> intervals_of(const nlohmann::json& line, const char* field,
                                   const std::string& where) {
  std::vector<Interval> intervals;
  for (const auto& pair : line.at(field)) {
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
  double covered = 0, reach = intervals.front().first, last_end = reach;
  for (const auto& [start, end] : intervals) {
    covered += std::max(0.0, end - std::max(start, reach));
    reach = std::max(reach, end);
    last_end = std::max(last_end, end);
  }
  const double span = last_end - intervals.front().first;
  return span > 0 ? covered / span : 1.0;
}

// Medians over the steps, bucket by bucket.
StepTimeline summarise(const std::vector<StepSpans>& steps, std::size_t first_step) {
  StepTimeline t;
  t.steps = steps.size();
  t.first_step = first_step;
  const auto median_of = [&](auto value) {
    std::vector<double> values;
    for (const auto& s : steps) values.push_back(value(s));
    return median(std::move(values));
  };
  t.step_seconds = median_of([](const StepSpans& s) { return s.seconds; });
  t.compute_seconds = median_of([](const StepSpans& s) { return s.compute; });
  const bool updates = !steps.front().updates.empty();
  for (std::size_t b = 0; b < steps.front().exchanges.size(); ++b) {
    BucketTimeline bucket;
    bucket.exchange_start = median_of([b](const StepSpans& s) { return s.exchanges[b].first; });
    bucket.exchange_end = median_of([b](const StepSpans& s) { return s.exchanges[b].second; });
    bucket.exchange_seconds = median_of(
        [b](const StepSpans& s) { return s.exchanges[b].second - s.exchanges[b].first; });
    if (updates && b < steps.front().updates.size()) {
      bucket.has_update = true;
      bucket.update_start = median_of([b](const StepSpans& s) { return s.updates[b].first; });
      bucket.update_end = median_of([b](const StepSpans& s) { return s.updates[b].second; });
      bucket.update_seconds = median_of(
          [b](const StepSpans& s) { return s.updates[b].second - s.updates[b].first; });
    }
    t.buckets.push_back(bucket);
  }
  t.tail_seconds = median_of([](const StepSpans& s) {
    return s.updates.empty() ? 0.0 : s.updates.back().second - s.exchanges.back().second;
  });
  t.exchange_busy_share = median_of([](const StepSpans& s) { return busy_share(s.exchanges); });
  return t;
}

}  // namespace

StepTimeline read_step_timeline(const std::string& path, std::size_t skip) {
  std::ifstream in(path);
  if (!in) throw InvalidArgument("cannot read the training log '" + path + "': check the path");
  std::vector<StepSpans> steps;
  std::size_t step_lines = 0, first_step = 0;
  std::string text;
  for (std::size_t number = 1; std::getline(in, text); ++number) {
    const std::string where = path + ", line " + std::to_string(number);
    nlohmann::json line;
    try {
      line = nlohmann::json::parse(text);
      if (line.value("event", "") != "step" || line.value("skipped", false)) continue;
      if (step_lines++ < skip) continue;
      if (!line.contains("exchanges")) {
        throw InvalidArgument(where + ": the step line has no 'exchanges': the timeline is "
                              "written by `qccl train --log` with the data-parallel engine");
      }
      StepSpans spans;
      spans.seconds = line.at("seconds").get<double>();
      spans.compute = line.at("compute").get<double>();
      spans.exchanges = intervals_of(line, "exchanges", where);
      if (line.contains("updates")) spans.updates = intervals_of(line, "updates", where);
      if (!steps.empty() && (spans.exchanges.size() != steps.front().exchanges.size() ||
                             spans.updates.size() != steps.front().updates.size())) {
        throw InvalidArgument(where + ": " + std::to_string(spans.exchanges.size()) +
                              " exchanges where earlier steps had " +
                              std::to_string(steps.front().exchanges.size()) +
                              " (the buckets changed, as after a MergeComp plan): pass a "
                              "larger --skip");
      }
      if (steps.empty()) first_step = line.value("step", std::size_t{0});
      steps.push_back(std::move(spans));
    } catch (const nlohmann::json::exception& e) {
      throw InvalidArgument(where + ": not a qccl train log line: " + e.what());
    }
  }
  if (steps.empty()) {
    throw InvalidArgument(path + ": no step left after skipping " + std::to_string(skip) + " of " +
                          std::to_string(step_lines) + ": lower --skip or log more steps");
  }
  return summarise(steps, first_step);
}

void print_step_timeline(std::ostream& out, const std::string& path, const StepTimeline& t) {
  const auto ms = [](double s) { return s * 1e3; };
  out << std::fixed << std::setprecision(1) << "timeline of " << path << ": medians of "
      << t.steps << " steps from step " << t.first_step
      << ", ms since the forward pass began (rank 0)\n"
      << "step " << ms(t.step_seconds) << " ms, forward+backward " << ms(t.compute_seconds)
      << " ms\n"
      << std::setw(6) << "bucket" << std::setw(16) << "exchange start" << std::setw(8) << "end"
      << std::setw(8) << "length" << std::setw(16) << "update start" << std::setw(8) << "end"
      << std::setw(8) << "length" << "\n";
  for (std::size_t b = 0; b < t.buckets.size(); ++b) {
    const auto& bucket = t.buckets[b];
    out << std::setw(6) << b << std::setw(16) << ms(bucket.exchange_start) << std::setw(8)
        << ms(bucket.exchange_end) << std::setw(8) << ms(bucket.exchange_seconds);
    if (bucket.has_update) {
      out << std::setw(16) << ms(bucket.update_start) << std::setw(8) << ms(bucket.update_end)
          << std::setw(8) << ms(bucket.update_seconds);
    }
    out << "\n";
  }
  out << "exchanges ran " << std::setprecision(0) << 100 * t.exchange_busy_share
      << "% of the time from the first one's start to the last one's end";
  if (!t.buckets.empty() && t.buckets.back().has_update) {
    out << "; the last update ends " << std::setprecision(1) << ms(t.tail_seconds)
        << " ms after the last exchange";
  }
  out << std::defaultfloat << "\n";
}

}  // namespace qccl::tools
