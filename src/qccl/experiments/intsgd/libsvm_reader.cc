#include <charconv>
#include <fstream>
#include <sstream>
#include <vector>

#include "qccl/common/errors.h"
#include "qccl/common/readable_file.h"
#include "qccl/experiments/intsgd/readers.h"

namespace qccl::convex {
namespace {

// Accepts a leading '+' ("+1" labels are common in LibSVM files), which
// from_chars does not.
bool parse_double(std::string_view text, double& value) {
  if (text.size() > 1 && text[0] == '+' && text[1] != '-' && text[1] != '+') text.remove_prefix(1);
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

template <class Int>
bool parse_integer(std::string_view text, Int& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

std::vector<std::string_view> split_whitespace(std::string_view line) {
  std::vector<std::string_view> tokens;
  std::size_t at = 0;
  while (true) {
    at = line.find_first_not_of(" \t\r", at);
    if (at == std::string_view::npos) break;
    const std::size_t end = line.find_first_of(" \t\r", at);
    tokens.push_back(line.substr(at, end == std::string_view::npos ? end : end - at));
    if (end == std::string_view::npos) break;
    at = end;
  }
  return tokens;
}

}  // namespace

Dataset parse_libsvm(std::istream& in, const std::string& source) {
  Dataset data;
  std::string line;
  std::vector<SparseEntry> entries;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    const std::string where = source + ":" + std::to_string(number) + ": ";
    std::string_view text(line);
    text = text.substr(0, text.find('#'));
    const auto tokens = split_whitespace(text);
    if (tokens.empty()) continue;
    double label = 0;
    if (tokens[0].find(',') != std::string_view::npos) {
      throw InvalidArgument(where + "multilabel samples ('" + std::string(tokens[0]) +
                            "') are not supported; give one label per line");
    }
    if (!parse_double(tokens[0], label)) {
      throw InvalidArgument(where + "the label '" + std::string(tokens[0]) + "' is not a number");
    }
    entries.clear();
    for (std::size_t t = 1; t < tokens.size(); ++t) {
      const auto token = tokens[t];
      const auto colon = token.find(':');
      if (token.substr(0, colon) == "qid") {
        throw InvalidArgument(where + "query ids (qid:) are not supported");
      }
      std::uint64_t index = 0;
      double value = 0;
      if (colon == std::string_view::npos || !parse_integer(token.substr(0, colon), index) ||
          !parse_double(token.substr(colon + 1), value)) {
        throw InvalidArgument(where + "'" + std::string(token) + "' is not index:value");
      }
      if (index < 1 || index > UINT32_MAX) {
        throw InvalidArgument(where + "feature index " + std::to_string(index) +
                              " is out of range (indices start at 1)");
      }
      const auto column = static_cast<std::uint32_t>(index - 1);
      if (!entries.empty() && column <= entries.back().column) {
        throw InvalidArgument(where + "feature indices must increase: " + std::to_string(index) +
                              " follows " + std::to_string(entries.back().column + 1));
      }
      if (value != 0.0) entries.push_back({column, value});
      data.set_features(column + std::size_t{1});
    }
    data.add_row(entries, label);
  }
  if (in.bad()) throw InvalidArgument(source + ": read error");
  if (data.rows() == 0) throw InvalidArgument(source + ": no samples");
  return data;
}

Dataset read_libsvm(const std::string& path) {
  check_readable_file(path, {}, "LibSVM file");  // a regular file: never a FIFO or a device
  std::ifstream in(path);
  if (!in) throw InvalidArgument("cannot open LibSVM file '" + path + "'");
  return parse_libsvm(in, path);
}

}  // namespace qccl::convex
