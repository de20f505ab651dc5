// qccl._qccl.plots: the SVG plots of qccl's tools (src/qccl/reports/
// svg_plot.h) for the Python benchmarks' reports, so that scripts/
// ddp-compare's plot follows the same rules as `qccl bench
// training-report`'s: a colour and marker per series, labels that never
// overlap, axes fitted to the data. Panels and series are plain dicts.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <set>
#include <string>

#include "module_parts.h"
#include "qccl/common/errors.h"
#include "qccl/reports/svg_plot.h"

namespace qccl::python {
namespace {

namespace py = pybind11;
using tools::PlotPanel;
using tools::PlotSeries;

// Refuses keys outside `known` (a misspelt key would be ignored otherwise).
void check_keys(const py::dict& dict, const std::set<std::string>& known, const char* what) {
  for (const auto& [key, value] : dict) {
    const auto name = py::str(key).cast<std::string>();
    if (!known.count(name)) throw InvalidArgument(std::string(what) + " has no key '" + name + "'");
  }
}

template <typename T>
T get(const py::dict& dict, const char* key, T fallback) {
  return dict.contains(key) ? dict[key].cast<T>() : fallback;
}

PlotSeries series_of(const py::dict& d) {
  check_keys(d, {"name", "points", "markers", "labels"}, "a series");
  PlotSeries s{get<std::string>(d, "name", ""),
               get<std::vector<std::pair<double, double>>>(d, "points", {}),
               get<bool>(d, "markers", false), get<std::vector<std::string>>(d, "labels", {})};
  if (!s.labels.empty() && s.labels.size() != s.points.size()) {
    throw InvalidArgument("series '" + s.name + "' has " + std::to_string(s.labels.size()) +
                          " labels for " + std::to_string(s.points.size()) + " points");
  }
  return s;
}

PlotPanel panel_of(const py::dict& d) {
  check_keys(d, {"title", "x_label", "y_label", "log_x", "log_y", "off_scale_outliers", "series"},
             "a panel");
  PlotPanel panel{get<std::string>(d, "title", ""),
                  get<std::string>(d, "x_label", ""),
                  get<std::string>(d, "y_label", ""),
                  get<bool>(d, "log_y", false),
                  get<bool>(d, "log_x", false),
                  {},
                  get<bool>(d, "off_scale_outliers", false)};
  for (const auto& s : get<py::list>(d, "series", py::list())) {
    panel.series.push_back(series_of(s.cast<py::dict>()));
  }
  return panel;
}

}  // namespace

void bind_plots(py::module_& module) {
  module.def(
      "render_svg",
      [](const py::list& panels) {
        std::vector<PlotPanel> converted;
        for (const auto& p : panels) converted.push_back(panel_of(p.cast<py::dict>()));
        return tools::render_svg(converted);
      },
      py::arg("panels"),
      "The SVG document of `panels`: dicts of title, x_label, y_label, log_x, log_y, "
      "off_scale_outliers and series, each series a dict of name, points ([(x, y)]), markers "
      "and labels (one per point).");
}

}  // namespace qccl::python
