// Text for the character-level language model: the fortunes of Debian's
// `fortunes` packages, as byte tokens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace qccl::data {

struct TextCorpus {
  std::vector<unsigned char> alphabet;  // token id -> byte, sorted
  std::vector<std::uint8_t> train;      // token ids
  std::vector<std::uint8_t> test;
  std::size_t documents = 0;            // fortunes read

  std::size_t vocabulary() const { return alphabet.size(); }
};

// Reads every fortune file in `directory` (those with a strfile index
// `NAME.dat` beside them, in name order), splits them at the "%" lines, and
// puts every `test_every`-th fortune in the test split. Throws
// InvalidArgument naming the directory when it holds no fortune files or
// too little text.
TextCorpus read_fortunes(const std::string& directory, std::size_t test_every = 20);

inline constexpr const char* kFortunesDirectory = "/usr/share/games/fortunes";

}  // namespace qccl::data
