#include "qccl/reports/plot_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace qccl::tools {
namespace {

// Advance widths in em of printable ASCII (from ' ' to '~'): the larger of
// DejaVu Sans's (what Debian renders "sans-serif" with) and Helvetica's
// (Arial's, Liberation Sans's), plus 3%, rounded up. Other characters
// count as 1.05 em.
constexpr double kAsciiWidths[95] = {
    0.33, 0.42, 0.48, 0.87, 0.66, 0.98, 0.81, 0.29, 0.41, 0.41, 0.52, 0.87, 0.33, 0.38, 0.33, 0.35,
    0.66, 0.66, 0.66, 0.66, 0.66, 0.66, 0.66, 0.66, 0.66, 0.66, 0.35, 0.35, 0.87, 0.87, 0.87, 0.58,
    1.05, 0.71, 0.71, 0.75, 0.80, 0.69, 0.63, 0.81, 0.78, 0.31, 0.52, 0.69, 0.58, 0.89, 0.78, 0.82,
    0.69, 0.82, 0.75, 0.69, 0.63, 0.76, 0.71, 1.02, 0.71, 0.69, 0.71, 0.41, 0.35, 0.41, 0.87, 0.58,
    0.52, 0.64, 0.66, 0.57, 0.66, 0.64, 0.37, 0.66, 0.66, 0.29, 0.29, 0.60, 0.29, 1.01, 0.66, 0.64,
    0.66, 0.66, 0.43, 0.54, 0.41, 0.66, 0.61, 0.85, 0.61, 0.61, 0.55, 0.66, 0.35, 0.66, 0.87};

double char_width_em(unsigned char c) {
  return c >= ' ' && c <= '~' ? kAsciiWidths[c - ' '] : 1.05;
}

}  // namespace

double text_width(std::string_view text, double font_size) {
  double em = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) == 0x80) continue;  // a UTF-8 continuation byte: counted with its lead
    em += char_width_em(c);
  }
  return em * font_size;
}

Box text_box(std::string_view text, double x, double baseline, double font_size, Anchor anchor) {
  const double width = text_width(text, font_size);
  const double left = anchor == Anchor::start    ? x
                      : anchor == Anchor::middle ? x - width / 2
                                                 : x - width;
  // ASCII reaches 0.76 em above the baseline; accented capitals 0.93 em.
  const bool ascii = std::all_of(text.begin(), text.end(), [](char c) { return (c & 0x80) == 0; });
  const double ascent = ascii ? 0.8 : 0.95;
  return {left, baseline - ascent * font_size, left + width, baseline + 0.25 * font_size};
}

std::vector<std::string> wrap_text(const std::string& text, double width, double font_size) {
  std::vector<std::string> lines;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    if (!lines.empty() && text_width(lines.back() + " " + word, font_size) <= width) {
      lines.back() += " " + word;
    } else {
      lines.push_back(word);
    }
  }
  if (lines.empty()) lines.emplace_back();
  return lines;
}

std::string shortened_to_fit(const std::string& text, double width, double font_size) {
  if (text_width(text, font_size) <= width) return text;
  std::string start = text;
  const auto continuation = [&] {
    return (static_cast<unsigned char>(start.back()) & 0xC0) == 0x80;
  };
  while (!start.empty() && text_width(start + "…", font_size) > width) {
    while (!start.empty() && continuation()) start.pop_back();  // a character's trailing bytes
    if (!start.empty()) start.pop_back();                       // and its first
  }
  return start + "…";
}

std::string escape_xml(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

std::string text_element(std::string_view text, double x, double baseline, double font_size,
                         Anchor anchor, std::string_view attributes) {
  std::ostringstream svg;
  svg << "<text x=\"" << x << "\" y=\"" << baseline << "\" font-size=\"" << font_size << "\"";
  if (anchor != Anchor::start) {
    svg << " text-anchor=\"" << (anchor == Anchor::middle ? "middle" : "end") << "\"";
  }
  if (!attributes.empty()) svg << " " << attributes;
  svg << ">" << escape_xml(text) << "</text>";
  return svg.str();
}

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  std::string out = text;
  const auto e = out.find('e');
  if (e == std::string::npos) return out;
  std::string exponent = out.substr(e + 1);
  const bool negative = exponent[0] == '-';
  exponent.erase(0, exponent.find_first_not_of("+-0"));
  return out.substr(0, e) + "e" + (negative ? "-" : "") + (exponent.empty() ? "0" : exponent);
}

std::string tick_text(double value, double step) {
  if (std::abs(value) >= 1e6 || step < 1e-4) return number_text(value);
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", decimals, value == 0 ? 0.0 : value);
  return text;
}

}  // namespace qccl::tools
