#include "svg_reading.h"

#include <algorithm>
#include <limits>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "qccl/reports/plot_text.h"

namespace qccl::tools::test {
namespace {

struct Tag {
  std::string name;
  std::map<std::string, std::string> attributes;
  bool closing = false, self_closing = false;
  std::string content;  // of a <text> or <title>
};

std::string unescape(std::string text) {
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"&lt;", "<"},
                                 {"&gt;", ">"},
                                 {"&quot;", "\""},
                                 {"&amp;", "&"}}) {
    for (std::size_t at; (at = text.find(from)) != std::string::npos;)
      text.replace(at, from.size(), to);
  }
  return text;
}

// The tags of `svg` in order; a <text> or <title> carries its content.
std::vector<Tag> tags_of(const std::string& svg) {
  static const std::regex attribute(R"re(([\w:-]+)="([^"]*)")re");
  std::vector<Tag> tags;
  for (std::size_t at = svg.find('<'); at != std::string::npos; at = svg.find('<', at)) {
    const std::size_t end = svg.find('>', at);
    if (end == std::string::npos) throw std::runtime_error("unterminated tag");
    const std::string inside = svg.substr(at + 1, end - at - 1);
    at = end + 1;
    if (inside.empty() || inside[0] == '?') continue;
    Tag tag;
    tag.closing = inside[0] == '/';
    tag.self_closing = inside.back() == '/';
    const std::size_t name_start = tag.closing ? 1 : 0;
    tag.name = inside.substr(name_start, inside.find_first_of(" /", name_start) - name_start);
    for (std::sregex_iterator m(inside.begin(), inside.end(), attribute), none; m != none; ++m) {
      tag.attributes[(*m)[1]] = unescape((*m)[2]);
    }
    if (!tag.closing && (tag.name == "text" || tag.name == "title")) {
      const std::size_t close = svg.find("</" + tag.name + ">", at);
      tag.content = unescape(svg.substr(at, close - at));
      at = close;
    }
    tags.push_back(std::move(tag));
  }
  return tags;
}

double number(const Tag& tag, const std::string& name) {
  const auto found = tag.attributes.find(name);
  if (found == tag.attributes.end()) throw std::runtime_error("<" + tag.name + "> has no " + name);
  return std::stod(found->second);
}

SvgText text_of(const Tag& tag) {
  SvgText text{tag.content, number(tag, "x"), number(tag, "y"), number(tag, "font-size"), "start"};
  if (tag.attributes.count("text-anchor")) text.anchor = tag.attributes.at("text-anchor");
  const Anchor anchor = text.anchor == "middle" ? Anchor::middle
                        : text.anchor == "end"  ? Anchor::end
                                                : Anchor::start;
  text.box = text_box(text.text, text.x, text.y, text.font_size, anchor);
  if (tag.attributes.count("transform")) {
    std::ostringstream expected;
    expected << "rotate(-90 " << text.x << " " << text.y << ")";
    if (tag.attributes.at("transform") != expected.str()) {
      throw std::runtime_error("unexpected transform " + tag.attributes.at("transform"));
    }
    // A quarter turn anticlockwise about (x, y): (x + dx, y + dy) goes to (x + dy, y - dx).
    const Box b = text.box;
    text.box = {text.x + (b.top - text.y), text.y - (b.right - text.x),
                text.x + (b.bottom - text.y), text.y - (b.left - text.x)};
    text.rotated = true;
  }
  return text;
}

SvgMarker marker_of(const Tag& tag) {
  SvgMarker marker;
  marker.colour = tag.attributes.at("fill");
  marker.shape = tag.attributes.at("class").substr(std::string("marker ").size());
  if (tag.name == "circle") {
    const double x = number(tag, "cx"), y = number(tag, "cy"), r = number(tag, "r");
    marker.box = {x - r, y - r, x + r, y + r};
    return marker;
  }
  constexpr double inf = std::numeric_limits<double>::infinity();
  marker.box = {inf, inf, -inf, -inf};
  std::istringstream points(tag.attributes.at("points"));
  double x, y;
  char comma;
  while (points >> x >> comma >> y) {
    marker.box = {std::min(marker.box.left, x), std::min(marker.box.top, y),
                  std::max(marker.box.right, x), std::max(marker.box.bottom, y)};
  }
  return marker;
}

}  // namespace

SvgPlot read_svg_plot(const std::string& svg) {
  SvgPlot plot;
  std::vector<std::string> groups;  // per open <g>: its series' title, or "legend"
  for (const auto& tag : tags_of(svg)) {
    const bool in_legend = std::find(groups.begin(), groups.end(), "legend") != groups.end();
    if (tag.closing && tag.name != "g") continue;
    if (tag.name == "svg" && !tag.closing) {
      plot.width = number(tag, "width");
      plot.height = number(tag, "height");
    } else if (tag.name == "g") {
      if (tag.closing)
        groups.pop_back();
      else
        groups.push_back(tag.attributes.count("class") ? std::string("legend") : std::string());
    } else if (tag.name == "title" && !groups.empty()) {
      groups.back() = tag.content;
      plot.series.push_back(tag.content);
    } else if (tag.name == "text") {
      plot.texts.push_back(text_of(tag));
      plot.texts.back().in_legend = in_legend;
    } else if (tag.attributes.count("class") &&
               tag.attributes.at("class").rfind("marker", 0) == 0) {
      plot.markers.push_back(marker_of(tag));
      plot.markers.back().in_legend = in_legend;
      if (!in_legend && !groups.empty()) plot.markers.back().series = groups.back();
    } else if (tag.name == "line" && tag.attributes.count("class")) {
      plot.leaders.push_back(
          {{number(tag, "x1"), number(tag, "y1")}, {number(tag, "x2"), number(tag, "y2")}});
    } else if (tag.name == "rect" && tag.attributes.count("x") && tag.attributes.count("stroke")) {
      const double x = number(tag, "x"), y = number(tag, "y");
      plot.plot_areas.push_back({x, y, x + number(tag, "width"), y + number(tag, "height")});
    }
  }
  return plot;
}

std::vector<std::string> overlapping_texts(const SvgPlot& plot) {
  std::vector<std::string> pairs;
  for (std::size_t i = 0; i < plot.texts.size(); ++i) {
    for (std::size_t j = i + 1; j < plot.texts.size(); ++j) {
      if (plot.texts[i].box.overlaps(plot.texts[j].box)) {
        pairs.push_back("\"" + plot.texts[i].text + "\" / \"" + plot.texts[j].text + "\"");
      }
    }
  }
  return pairs;
}

}  // namespace qccl::tools::test
