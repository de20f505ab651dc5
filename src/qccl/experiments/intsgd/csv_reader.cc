#include <charconv>
#include <fstream>
#include <vector>

#include "qccl/common/errors.h"
#include "qccl/common/readable_file.h"
#include "qccl/experiments/intsgd/readers.h"

namespace qccl::convex {
namespace {

// The fields of one line as numbers; false if any is not a number.
bool parse_fields(std::string_view line, std::vector<double>& fields) {
  fields.clear();
  while (true) {
    const auto comma = line.find(',');
    std::string_view field = line.substr(0, comma);
    while (!field.empty() && (field.front() == ' ' || field.front() == '\t')) field.remove_prefix(1);
    while (!field.empty() && (field.back() == ' ' || field.back() == '\t' || field.back() == '\r')) {
      field.remove_suffix(1);
    }
    double value = 0;
    const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (field.empty() || error != std::errc() || end != field.data() + field.size()) return false;
    fields.push_back(value);
    if (comma == std::string_view::npos) return true;
    line.remove_prefix(comma + 1);
  }
}

}  // namespace

Dataset parse_csv(std::istream& in, const std::string& source, int label_column) {
  Dataset data;
  std::string line;
  std::vector<double> fields;
  std::vector<SparseEntry> entries;
  std::size_t width = 0;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    const std::string where = source + ":" + std::to_string(number) + ": ";
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (!parse_fields(line, fields)) {
      if (number == 1) continue;  // header
      throw InvalidArgument(where + "a field is not a number");
    }
    if (width == 0) {
      width = fields.size();
      if (width < 2) throw InvalidArgument(where + "needs a label and at least one feature");
      const int columns = static_cast<int>(width);
      if (label_column < -1 || label_column >= columns) {
        throw InvalidArgument(source + ": label column " + std::to_string(label_column) +
                              " does not exist; the rows have " + std::to_string(width) +
                              " columns (0.." + std::to_string(width - 1) + ", or -1 for the last)");
      }
    } else if (fields.size() != width) {
      throw InvalidArgument(where + "has " + std::to_string(fields.size()) + " fields, earlier rows " +
                            std::to_string(width));
    }
    const std::size_t label_at = label_column < 0 ? width - 1 : static_cast<std::size_t>(label_column);
    entries.clear();
    std::uint32_t column = 0;
    for (std::size_t f = 0; f < width; ++f) {
      if (f == label_at) continue;
      entries.push_back({column++, fields[f]});  // dense: zeros kept, so standardize works
    }
    data.add_row(entries, fields[label_at]);
  }
  if (in.bad()) throw InvalidArgument(source + ": read error");
  if (data.rows() == 0) throw InvalidArgument(source + ": no samples");
  return data;
}

Dataset read_csv(const std::string& path, int label_column) {
  check_readable_file(path, {}, "CSV file");  // a regular file: never a FIFO or a device
  std::ifstream in(path);
  if (!in) throw InvalidArgument("cannot open CSV file '" + path + "'");
  return parse_csv(in, path, label_column);
}

}  // namespace qccl::convex
