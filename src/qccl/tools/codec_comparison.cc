#include "qccl/tools/codec_comparison.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "qccl/common/errors.h"
#include "qccl/common/files.h"
#include "qccl/reports/svg_plot.h"

namespace qccl::tools {
namespace {

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  for (std::size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1) {
    fields.push_back(line.substr(start, tab - start));
  }
  fields.push_back(line.substr(start));
  return fields;
}

ComparisonRun read_run(const std::string& directory, const std::vector<std::string>& fields,
                       const std::string& where) {
  ComparisonRun run{fields[0], fields[1], fields[2], fields[3]};
  const std::string path = directory + "/" + fields[4];
  std::ifstream in(path);
  if (!in) throw InvalidArgument(where + ": cannot read the summary " + path + " (did that run fail?)");
  try {
    const auto summaries = nlohmann::json::parse(in);
    if (!summaries.is_array() || summaries.size() != 1) {
      throw InvalidArgument("expected one training summary");
    }
    const auto& s = summaries[0];
    run.accuracy = s.at("accuracy").get<double>();
    run.test_loss = s.at("test_loss").get<double>();
    run.ms_per_step = 1000.0 / s.at("steps_per_second").get<double>();
    run.sent_bytes_per_step = s.at("sent_bytes_per_step").get<double>();
    run.steps = s.at("steps").get<std::size_t>();
  } catch (const std::exception& e) {
    throw InvalidArgument(where + ": " + path + " is not a qccl train summary: " + e.what());
  }
  return run;
}

// The runs of one (model, rate), in the order they ran.
struct Group {
  std::string model, rate;
  std::vector<const ComparisonRun*> runs;
  const ComparisonRun* fp32() const {
    for (const auto* run : runs) {
      if (run->codec == "fp32") return run;
    }
    return nullptr;
  }
};

std::vector<Group> groups_of(const std::vector<ComparisonRun>& runs) {
  std::vector<Group> groups;
  for (const auto& run : runs) {
    Group* group = nullptr;
    for (auto& g : groups) {
      if (g.model == run.model && g.rate == run.rate) group = &g;
    }
    if (group == nullptr) group = &groups.emplace_back(Group{run.model, run.rate, {}});
    group->runs.push_back(&run);
  }
  return groups;
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

// "73.4 MiB", "58.8 KiB", "12 B".
std::string size_text(double bytes) {
  if (bytes >= 1024.0 * 1024.0) return fixed(bytes / (1024.0 * 1024.0), 1) + " MiB";
  if (bytes >= 1024.0) return fixed(bytes / 1024.0, 1) + " KiB";
  return fixed(bytes, 0) + " B";
}

std::string comparison_csv(const std::vector<ComparisonRun>& runs) {
  std::ostringstream csv;
  csv << "model,rate,codec,settings,steps,accuracy,test_loss,ms_per_step,sent_bytes_per_step\n";
  for (const auto& r : runs) {
    csv << r.model << "," << r.rate << ",\"" << r.codec << "\",\"" << r.settings << "\","
        << r.steps << "," << r.accuracy << "," << r.test_loss << "," << r.ms_per_step << ","
        << r.sent_bytes_per_step << "\n";
  }
  return csv.str();
}

std::string comparison_svg(const std::vector<ComparisonRun>& runs) {
  std::vector<PlotPanel> panels;
  for (const auto& group : groups_of(runs)) {
    // A run that diverged is drawn on the edge, so that the axis fits the
    // differences between the others.
    PlotPanel panel{group.model + ", " + group.rate, "ms per step (log scale)", "test accuracy (%)",
                    false, true, {}, true};
    for (const auto* run : group.runs) {
      panel.series.push_back(
          {run->codec, {{run->ms_per_step, 100.0 * run->accuracy}}, true, {run->codec}});
    }
    panels.push_back(std::move(panel));
  }
  return render_svg(panels);
}

}  // namespace

std::vector<ComparisonRun> load_comparison(const std::string& directory) {
  const std::string index = directory + "/runs.tsv";
  std::ifstream in(index);
  if (!in) throw InvalidArgument("cannot read " + index + ": is this a scripts/compare-codecs folder?");
  std::vector<ComparisonRun> runs;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const std::string where = index + " line " + std::to_string(number);
    const auto fields = split_tabs(line);
    if (fields.size() != 5) {
      throw InvalidArgument(where + ": expected 5 tab-separated fields (model, rate, codec, "
                            "settings, summary file), found " + std::to_string(fields.size()));
    }
    runs.push_back(read_run(directory, fields, where));
  }
  if (runs.empty()) throw InvalidArgument(index + " lists no runs");
  return runs;
}

std::string comparison_markdown(const std::vector<ComparisonRun>& runs) {
  std::ostringstream md;
  for (const auto& group : groups_of(runs)) {
    const ComparisonRun* base = group.fp32();
    md << "### " << group.model << ", " << group.rate << "\n\n"
       << "| codec | settings | steps | test accuracy | vs fp32 (points) | test loss | ms/step "
          "| speed-up over fp32 | sent per step |\n"
       << "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
    for (const auto* r : group.runs) {
      const bool compared = base != nullptr && r != base;
      md << "| " << r->codec << " | " << r->settings << " | " << r->steps << " | "
         << fixed(100 * r->accuracy, 2) << "% | "
         << (compared ? fixed(100 * (r->accuracy - base->accuracy), 2) : "-") << " | "
         << fixed(r->test_loss, 4) << " | "
         << fixed(r->ms_per_step, 1) << " | "
         << (base != nullptr ? fixed(base->ms_per_step / r->ms_per_step, 2) + "×" : "-") << " | "
         << size_text(r->sent_bytes_per_step) << " |\n";
    }
    md << "\n";
  }
  return md.str();
}

std::vector<std::string> write_comparison_report(const std::vector<ComparisonRun>& runs,
                                                 const std::string& directory) {
  const std::vector<std::pair<std::string, std::string>> files{
      {directory + "/comparison.md", comparison_markdown(runs)},
      {directory + "/comparison.csv", comparison_csv(runs)},
      {directory + "/comparison.svg", comparison_svg(runs)}};
  std::vector<std::string> written;
  for (const auto& [path, text] : files) {
    write_file_atomically(path, text);
    written.push_back(path);
  }
  return written;
}

}  // namespace qccl::tools
