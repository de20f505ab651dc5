// Plain-text tables: every header lines up with its values, whatever their
// width, and the train summary is such a table.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "qccl/common/errors.h"
#include "qccl/tools/text_table.h"
#include "qccl/tools/train_command.h"

namespace qccl::tools {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The display column just past `word`'s first whole-word match at or after
// display column `from` in `line` (npos if absent).
std::size_t end_column(const std::string& line, const std::string& word, std::size_t from = 0) {
  for (std::size_t at = line.find(word); at != std::string::npos; at = line.find(word, at + 1)) {
    const std::size_t start = display_width(line.substr(0, at));
    const bool whole = (at == 0 || line[at - 1] == ' ') &&
                       (at + word.size() == line.size() || line[at + word.size()] == ' ');
    if (whole && start >= from) return start + display_width(word);
  }
  return std::string::npos;
}

TEST(TextTable, RightAlignedHeadersEndWhereTheirValuesEnd) {
  TextTable table({{"name", TextTable::Align::left}, {"ms"}, {"bytes"}});
  table.add_row({"a", "1.25", "12"});
  table.add_row({"a-much-longer-name", "123456789.00", "7"});
  std::ostringstream out;
  table.print(out);
  const auto lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(end_column(lines[0], "ms"), end_column(lines[1], "1.25"));
  EXPECT_EQ(end_column(lines[0], "ms"), end_column(lines[2], "123456789.00"));
  EXPECT_EQ(end_column(lines[0], "bytes"), end_column(lines[1], "12"));
  EXPECT_EQ(end_column(lines[0], "bytes"), end_column(lines[2], "7"));
  // Left-aligned: the header and the values start in column 0.
  EXPECT_EQ(lines[1].rfind("a ", 0), 0u);
  for (const auto& line : lines) EXPECT_NE(line.back(), ' ') << "trailing blank: '" << line << "'";
}

TEST(TextTable, GroupLabelsSitAboveTheirColumnsAndWidenThemWhenLonger) {
  using A = TextTable::Align;
  TextTable table({{"codec", A::left, ""},
                   {"a", A::right, "a very long group label"},
                   {"b", A::right, "a very long group label"},
                   {"c", A::right, "g2"}});
  table.add_row({"fp32", "1", "2", "3"});
  std::ostringstream out;
  table.print(out);
  const auto lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 3u);
  const std::size_t label_start = lines[0].find("a very long group label");
  ASSERT_NE(label_start, std::string::npos);
  // The group's columns end where its label ends at the latest, and the
  // separators stand in the same place on every line.
  EXPECT_LE(end_column(lines[1], "b"), label_start + std::string("a very long group label").size());
  EXPECT_EQ(lines[0].find('|'), lines[1].find('|'));
  EXPECT_EQ(lines[1].find('|'), lines[2].find('|'));
  EXPECT_EQ(lines[0].rfind('|'), lines[2].rfind('|'));
  EXPECT_EQ(end_column(lines[1], "c"), end_column(lines[2], "3"));
}

TEST(TextTable, CountsCharactersNotBytes) {
  EXPECT_EQ(display_width("α≤β"), 3u);
  TextTable table({{"α", TextTable::Align::right}, {"x"}});
  table.add_row({"12345", "1"});
  std::ostringstream out;
  table.print(out);
  const auto lines = lines_of(out.str());
  EXPECT_EQ(end_column(lines[0], "α"), end_column(lines[1], "12345"));
}

TEST(TextTable, ARowOfAnotherWidthIsRefused) {
  TextTable table({{"a"}, {"b"}});
  EXPECT_THROW(table.add_row({"1"}), InvalidArgument);
  EXPECT_THROW(TextTable({}), InvalidArgument);
}

engines::TrainSummary summary(const std::string& codec, double scale) {
  engines::TrainSummary s;
  s.model = "mlp";
  s.data = "fashion-mnist";
  s.codec = codec;
  s.ranks = 2;
  s.metric_name = "accuracy";
  s.final_metric = 0.8758;
  s.wall_seconds = 12.5 * scale;
  s.steps_per_second = 100 / scale;
  s.split.data = 0.0001 * scale;
  s.split.compute = 0.002 * scale;
  s.split.waiting = 0.0005 * scale;
  s.split.optimizer = 0.0001 * scale;
  s.split.encode = 0.0003 * scale;
  s.split.communicate = 0.001 * scale;
  s.split.decode = 0.0002 * scale;
  s.payload_bytes_per_step = 900e3 * scale;
  s.sent_bytes_per_step = 900e3 * scale;
  s.compression_ratio = 1 * scale;
  return s;
}

// Values a thousand times wider than usual (slow links, huge models) still
// sit under their headers.
TEST(TrainSummaryTable, EveryHeaderEndsWhereItsValuesEnd) {
  std::ostringstream out;
  print_train_summaries(out, {summary("fp32", 1), summary("ef(global-qsgd:bits=4)", 1000)});
  const auto lines = lines_of(out.str());
  std::size_t header = 0;
  while (header < lines.size() && lines[header].rfind("codec ", 0) != 0) ++header;
  ASSERT_LT(header + 2, lines.size()) << out.str();
  const auto& slow = lines[header + 2];
  EXPECT_EQ(end_column(lines[header], "accuracy"), end_column(slow, "0.8758"));
  EXPECT_EQ(end_column(lines[header], "s"), end_column(slow, "12500.0"));  // "wall s"
  EXPECT_EQ(end_column(lines[header], "compute"), end_column(slow, "2000.00"));
  EXPECT_EQ(end_column(lines[header], "comm"), end_column(slow, "1000.00"));
  EXPECT_EQ(end_column(lines[header], "ratio"), end_column(slow, "1000.0x"));
  const auto fast = lines[header + 1];
  EXPECT_EQ(end_column(lines[header], "compute"), end_column(fast, "2.00"));
  EXPECT_EQ(end_column(lines[header], "ratio"), end_column(fast, "1.0x"));
  // The group line's separators stand where the header's do.
  EXPECT_EQ(lines[header - 1].find('|'), lines[header].find('|'));
}

}  // namespace
}  // namespace qccl::tools
