#include "corpus_files.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

#include "qccl/common/errors.h"

namespace qccl::fuzz {
namespace {

constexpr std::string_view kMagic = "qccl-fuzz 1";

// The value of a "key value" header line, or null.
std::optional<std::string> field(std::istream& in, std::string_view key) {
  std::string line;
  if (!std::getline(in, line) || line.rfind(std::string(key) + " ", 0) != 0) return std::nullopt;
  return line.substr(key.size() + 1);
}

}  // namespace

void write_entry(const std::filesystem::path& file, const CorpusEntry& entry) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary);
  out << kMagic << "\ntarget " << entry.target << "\nfirst " << entry.first << "\ncount "
      << entry.count << "\n\n";
  out.write(reinterpret_cast<const char*>(entry.bytes.data()),
            static_cast<std::streamsize>(entry.bytes.size()));
  if (!out) throw InvalidArgument("cannot write the fuzz corpus file " + file.string());
}

std::optional<CorpusEntry> read_entry(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string magic, blank;
  if (!std::getline(in, magic) || magic != kMagic) return std::nullopt;
  const auto target = field(in, "target");
  const auto first = field(in, "first");
  const auto count = field(in, "count");
  if (!target || !first || !count || !std::getline(in, blank) || !blank.empty()) {
    return std::nullopt;
  }
  CorpusEntry entry;
  entry.target = *target;
  try {
    entry.first = std::stoul(*first);
    entry.count = std::stoul(*count);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const std::string rest((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  entry.bytes.resize(rest.size());
  std::transform(rest.begin(), rest.end(), entry.bytes.begin(),
                 [](char c) { return static_cast<std::byte>(c); });
  return entry;
}

std::vector<CorpusEntry> read_corpus(const std::filesystem::path& directory) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(directory)) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(directory)) {
      if (e.is_regular_file()) files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<CorpusEntry> entries;
  for (const auto& f : files) {
    if (auto entry = read_entry(f)) entries.push_back(std::move(*entry));
  }
  return entries;
}

}  // namespace qccl::fuzz
