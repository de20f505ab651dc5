// The fuzzer's corpus: seed inputs kept under tests/fuzz/corpus/<codec>/,
// one file each — a short text header naming the target and the chunk's
// elements, a blank line, then the bytes:
//   qccl-fuzz 1
//   target global-qsgd:bits=4 allreduce mean n3 r0
//   first 0
//   count 32
//
//   <bytes>
// A state entry has "first 0" and "count 0" and names a codec spec as its
// target ("state ef(global-qsgd:bits=4)"). The same format records the
// input of a failure, which the fuzzer then replays (--replay).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "mutations.h"

namespace qccl::fuzz {

struct CorpusEntry {
  std::string target;
  std::size_t first = 0;
  std::size_t count = 0;
  Bytes bytes;
};

void write_entry(const std::filesystem::path& file, const CorpusEntry& entry);
// Null if the file is not a corpus entry.
std::optional<CorpusEntry> read_entry(const std::filesystem::path& file);
// Every entry under `directory`, in path order; unreadable files are skipped.
std::vector<CorpusEntry> read_corpus(const std::filesystem::path& directory);

}  // namespace qccl::fuzz
