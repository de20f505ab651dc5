// Plain-text tables for what the commands print: every column as wide as
// its widest cell, so a header always lines up with its values whatever
// their size, with an optional line of group names above the headers.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace qccl::tools {

class TextTable {
 public:
  enum class Align { left, right };
  struct Column {
    std::string header;
    Align align = Align::right;
    // Consecutive columns with the same non-empty group share one label
    // above their headers, and groups are set apart by " | ".
    std::string group;
  };

  explicit TextTable(std::vector<Column> columns);

  // One row, a cell per column; InvalidArgument for another count.
  void add_row(std::vector<std::string> cells);

  // The group line (when any column has a group), the header line and the
  // rows, each line without trailing blanks.
  void print(std::ostream& out) const;

 private:
  std::vector<std::size_t> widths() const;
  std::string line(const std::vector<std::string>& cells, const std::vector<std::size_t>& widths) const;
  std::string group_line(const std::vector<std::size_t>& widths) const;
  bool starts_group(std::size_t column) const;

  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Display width of UTF-8 text: its code points (every character the
// tables print is one column wide).
std::size_t display_width(const std::string& text);

}  // namespace qccl::tools
