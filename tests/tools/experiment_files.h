// Test helpers for the experiments' outputs: running an experiment on
// in-process ranks for rank 0's report, reading a file whole, a CSV's
// header and row count, and a file's dependence on the seed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "../support/world.h"

namespace qccl::tools::test_files {

// `run(comm)` on every one of `ranks` in-process ranks; rank 0's result.
template <typename Run>
auto rank_zero_result(int ranks, Run run) {
  decltype(run(std::declval<Communicator&>())) result;
  test::run_world(ranks, [&](Communicator& comm) {
    auto mine = run(comm);
    if (comm.rank() == 0) result = std::move(mine);
  });
  return result;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first line of a CSV text and how many lines follow it.
inline std::pair<std::string, std::size_t> csv_header_and_rows(const std::string& csv) {
  std::istringstream lines(csv);
  std::string header;
  std::getline(lines, header);
  std::size_t rows = 0;
  for (std::string line; std::getline(lines, line);) ++rows;
  return {header, rows};
}

// `write(directory, seed)` runs an experiment that writes directory/`file`.
// `first` is such a file from seed 0: a second run with seed 0 (into
// root/b) must write the same bytes, one with seed 5 (into root/c) others.
template <typename Write>
void expect_file_follows_the_seed(const std::string& first, const std::filesystem::path& root,
                                  const std::string& file, Write write) {
  write((root / "b").string(), std::uint64_t{0});
  EXPECT_EQ(read_text((root / "b" / file).string()), read_text(first)) << file;
  write((root / "c").string(), std::uint64_t{5});
  EXPECT_NE(read_text((root / "c" / file).string()), read_text(first)) << file;
}

}  // namespace qccl::tools::test_files
