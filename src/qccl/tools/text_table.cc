#include "qccl/tools/text_table.h"

#include <algorithm>
#include <ostream>

#include "qccl/common/errors.h"

namespace qccl::tools {

std::size_t display_width(const std::string& text) {
  // Count the bytes that start a code point (not 10xxxxxx continuations).
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char ch) {
    return (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
  }));
}

namespace {

std::string padded(const std::string& text, std::size_t width, TextTable::Align align) {
  const std::size_t shown = display_width(text);
  const std::string fill(width > shown ? width - shown : 0, ' ');
  return align == TextTable::Align::left ? text + fill : fill + text;
}

std::string without_trailing_blanks(std::string text) {
  text.erase(text.find_last_not_of(' ') + 1);
  return text;
}

}  // namespace

TextTable::TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {
  if (columns_.empty()) throw InvalidArgument("a table needs at least one column");
}

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size()) {
    throw InvalidArgument("a table row has " + std::to_string(cells.size()) + " cells for " +
                          std::to_string(columns_.size()) + " columns");
  }
  rows_.push_back(std::move(cells));
}

bool TextTable::starts_group(std::size_t column) const {
  return column > 0 && columns_[column].group != columns_[column - 1].group;
}

// Each column fits its header and cells; then the last column of a group
// widens until the group's label fits above the group.
std::vector<std::size_t> TextTable::widths() const {
  std::vector<std::size_t> width(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    width[c] = display_width(columns_[c].header);
    for (const auto& row : rows_) width[c] = std::max(width[c], display_width(row[c]));
  }
  for (std::size_t first = 0; first < columns_.size();) {
    std::size_t last = first;
    while (last + 1 < columns_.size() && !starts_group(last + 1)) ++last;
    std::size_t span = 0;
    for (std::size_t c = first; c <= last; ++c) span += width[c] + (c > first ? 2 : 0);
    const std::size_t label = display_width(columns_[first].group);
    if (label > span) width[last] += label - span;
    first = last + 1;
  }
  return width;
}

std::string TextTable::line(const std::vector<std::string>& cells,
                            const std::vector<std::size_t>& widths) const {
  std::string text;
  for (std::size_t c = 0; c < cells.size(); ++c) {
    if (c > 0) text += starts_group(c) ? " | " : "  ";
    text += padded(cells[c], widths[c], columns_[c].align);
  }
  return without_trailing_blanks(text);
}

std::string TextTable::group_line(const std::vector<std::size_t>& widths) const {
  std::string text;
  for (std::size_t first = 0; first < columns_.size();) {
    std::size_t last = first, span = widths[first];
    while (last + 1 < columns_.size() && !starts_group(last + 1)) span += 2 + widths[++last];
    if (first > 0) text += " | ";
    text += padded(columns_[first].group, span, Align::left);
    first = last + 1;
  }
  return without_trailing_blanks(text);
}

void TextTable::print(std::ostream& out) const {
  const auto width = widths();
  const bool grouped = std::any_of(columns_.begin(), columns_.end(),
                                   [](const Column& c) { return !c.group.empty(); });
  if (grouped) out << group_line(width) << "\n";
  std::vector<std::string> headers;
  for (const auto& c : columns_) headers.push_back(c.header);
  out << line(headers, width) << "\n";
  for (const auto& row : rows_) out << line(row, width) << "\n";
}

}  // namespace qccl::tools
