// Test helpers for the experiments' outputs: running an experiment on
// in-process ranks for rank 0's report, reading a file whole, and a CSV's
// header and row count.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <utility>

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

}  // namespace qccl::tools::test_files
