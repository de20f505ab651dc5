#include "qccl/data/text_corpus.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "qccl/common/errors.h"
#include "qccl/common/files.h"

namespace qccl::data {
namespace {

// The fortune files of a directory: regular files with a NAME.dat index.
std::vector<std::filesystem::path> fortune_files(const std::string& directory) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(directory, error)) {
    throw InvalidArgument("'" + directory + "' is not a directory (install Debian's fortunes "
                          "package, or pass a directory of fortune files with --data-dir)");
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(directory)) {
    const fs::path& path = entry.path();
    if (path.extension() == ".dat" || path.extension() == ".u8") continue;
    if (!entry.is_regular_file() || entry.is_symlink()) continue;
    if (fs::exists(fs::path(path).concat(".dat"))) files.push_back(path);
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> split_fortunes(const std::string& text) {
  std::vector<std::string> fortunes;
  std::istringstream lines(text);
  std::string line, current;
  while (std::getline(lines, line)) {
    if (line == "%") {
      if (!current.empty()) fortunes.push_back(std::move(current));
      current.clear();
    } else {
      current += line;
      current += '\n';
    }
  }
  if (!current.empty()) fortunes.push_back(std::move(current));
  return fortunes;
}

}  // namespace

TextCorpus read_fortunes(const std::string& directory, std::size_t test_every) {
  if (test_every < 2) throw InvalidArgument("fortunes: test_every must be at least 2");
  const auto files = fortune_files(directory);
  if (files.empty()) {
    throw InvalidArgument("'" + directory + "' holds no fortune files (NAME with NAME.dat); "
                          "install Debian's fortunes package");
  }
  std::string train, test;
  TextCorpus corpus;
  for (const auto& path : files) {
    const std::string text = read_whole_file(path.string());
    for (auto& fortune : split_fortunes(text)) {
      (corpus.documents % test_every == test_every - 1 ? test : train) += fortune;
      ++corpus.documents;
    }
  }
  if (train.size() < 1024 || test.size() < 64) {
    throw InvalidArgument("'" + directory + "' holds too little fortune text (" +
                          std::to_string(train.size() + test.size()) + " bytes)");
  }
  std::array<bool, 256> seen{};
  for (const unsigned char c : train + test) seen[c] = true;
  std::array<std::uint8_t, 256> id{};
  for (int c = 0; c < 256; ++c) {
    if (seen[static_cast<std::size_t>(c)]) {
      id[static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(corpus.alphabet.size());
      corpus.alphabet.push_back(static_cast<unsigned char>(c));
    }
  }
  const auto to_ids = [&](const std::string& text) {
    std::vector<std::uint8_t> ids(text.size());
    std::transform(text.begin(), text.end(), ids.begin(),
                   [&](char c) { return id[static_cast<unsigned char>(c)]; });
    return ids;
  };
  corpus.train = to_ids(train);
  corpus.test = to_ids(test);
  return corpus;
}

}  // namespace qccl::data
