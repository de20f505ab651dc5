// Text in the plots: how much room a string takes, the box it covers, and
// how numbers and markup are written. No font is read: the widths are a
// table of the widest of the fonts that "sans-serif" means on Debian
// (DejaVu Sans), Windows and macOS (Arial, Helvetica).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "qccl/reports/plot_geometry.h"

namespace qccl::tools {

enum class Anchor { start, middle, end };

// Estimated advance width of UTF-8 `text` at `font_size` pixels: each
// character's width in DejaVu Sans or Helvetica, whichever is wider, with
// 3% to spare; 1.05 em for a character outside ASCII.
double text_width(std::string_view text, double font_size);

// The box a one-line text drawn at (x, baseline) covers: the width above,
// from the capitals' height to the descenders.
Box text_box(std::string_view text, double x, double baseline, double font_size, Anchor anchor);

// `text` split at spaces into lines of at most `width` pixels (a single word
// longer than that makes a line of its own).
std::vector<std::string> wrap_text(const std::string& text, double width, double font_size);

// `text` itself if it is at most `width` pixels wide, else as much of its
// start as fits with "…" after it.
std::string shortened_to_fit(const std::string& text, double width, double font_size);

// `text` with &, <, > and " escaped for SVG.
std::string escape_xml(std::string_view text);

// A <text> element writing `text` (escaped) from (x, baseline), with any
// further `attributes` ("fill=\"#444\"").
std::string text_element(std::string_view text, double x, double baseline, double font_size,
                         Anchor anchor, std::string_view attributes = "");

// A number in at most 4 significant digits, "2.5", "1000", "1e-05" as
// "1e-5", "3e+06" as "3e6".
std::string number_text(double value);

// A tick value with as many decimals as the tick step needs ("57.5" and
// "58" for ticks 0.5 apart), so that no two ticks print alike.
std::string tick_text(double value, double step);

}  // namespace qccl::tools
