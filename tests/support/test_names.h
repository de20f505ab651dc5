// Names for parametrised tests (GoogleTest allows letters, digits and '_').
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <tuple>

#include "qccl/collectives/options.h"

namespace qccl::test {

// `text` with every other character replaced by '_'.
inline std::string test_name(std::string text) {
  for (char& c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return text;
}

// "n4_ring" for a (ranks, algorithm) parameter.
inline std::string ranks_algorithm_name(
    const ::testing::TestParamInfo<std::tuple<int, Algorithm>>& info) {
  return "n" + std::to_string(std::get<0>(info.param)) + "_" +
         test_name(std::string(to_string(std::get<1>(info.param))));
}

}  // namespace qccl::test
