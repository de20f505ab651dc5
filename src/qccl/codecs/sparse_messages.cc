#include "qccl/codecs/sparse_messages.h"

#include <cstring>
#include <string>

#include "qccl/common/errors.h"

namespace qccl {
namespace {

void put_word(std::byte* at, std::uint32_t word) { std::memcpy(at, &word, 4); }

std::uint32_t word_at(const std::byte* at) {
  std::uint32_t word;
  std::memcpy(&word, at, 4);
  return word;
}

CommError corrupt(std::string_view what, std::size_t rank, const std::string& why) {
  return CommError(std::string(what) + ": the sparse message of rank " + std::to_string(rank) + " " +
                   why + " (corrupt message?)");
}

// One rank's message appended to `entries` as indices then codes; returns
// its count of non-zero codes.
std::size_t expand_one(const std::byte* message, std::size_t size, std::size_t length,
                       std::string_view what, std::size_t rank, std::vector<std::byte>& entries) {
  if (size < 4) throw corrupt(what, rank, "is " + std::to_string(size) + " bytes, shorter than its header");
  const std::uint32_t header = word_at(message);
  const std::byte* body = message + 4;
  const std::size_t body_size = size - 4;
  const std::size_t at = entries.size();
  if (header == kEntriesMessage) {
    if (body_size % 5 != 0) {
      throw corrupt(what, rank, "holds " + std::to_string(body_size) + " bytes of entries, not whole entries of 5");
    }
    entries.insert(entries.end(), body, body + body_size);
    return body_size / 5;
  }
  const std::size_t runs = header;
  if (runs > body_size / 8) throw corrupt(what, rank, "announces " + std::to_string(runs) + " runs it does not hold");
  const std::byte* codes = body + 8 * runs;
  std::size_t elements = 0, nonzero = 0;
  for (std::size_t k = 0; k < runs; ++k) {
    const std::uint64_t first = word_at(body + 8 * k), count = word_at(body + 8 * k + 4);
    if (first + count > length) {
      throw corrupt(what, rank, "has a run of " + std::to_string(count) + " from " +
                                    std::to_string(first) + " beyond the data's " + std::to_string(length));
    }
    elements += count;
  }
  if (body_size != 8 * runs + elements) {
    throw corrupt(what, rank, "is " + std::to_string(size) + " bytes; its runs need " +
                                  std::to_string(4 + 8 * runs + elements));
  }
  for (std::size_t e = 0; e < elements; ++e) nonzero += codes[e] != std::byte{0};
  entries.resize(at + 5 * nonzero);
  std::byte* index = entries.data() + at;
  std::byte* code = index + 4 * nonzero;
  std::size_t e = 0, n = 0;
  for (std::size_t k = 0; k < runs; ++k) {
    const std::uint32_t first = word_at(body + 8 * k), count = word_at(body + 8 * k + 4);
    for (std::uint32_t j = 0; j < count; ++j, ++e) {
      if (codes[e] == std::byte{0}) continue;
      put_word(index + 4 * n, first + j);
      code[n++] = codes[e];
    }
  }
  return nonzero;
}

}  // namespace

void pack_sparse_message(std::span<const std::uint32_t> index, std::span<const std::byte> codes,
                         std::span<const Range> runs, std::span<const std::byte> run_codes,
                         std::vector<std::byte>& out) {
  const std::size_t entries_bytes = 4 + 5 * index.size();
  const std::size_t runs_bytes = 4 + 8 * runs.size() + run_codes.size();
  if (!runs.empty() && runs_bytes < entries_bytes) {
    out.resize(runs_bytes);
    put_word(out.data(), static_cast<std::uint32_t>(runs.size()));
    for (std::size_t k = 0; k < runs.size(); ++k) {
      put_word(out.data() + 4 + 8 * k, static_cast<std::uint32_t>(runs[k].first));
      put_word(out.data() + 8 + 8 * k, static_cast<std::uint32_t>(runs[k].count));
    }
    std::memcpy(out.data() + 4 + 8 * runs.size(), run_codes.data(), run_codes.size());
    return;
  }
  out.resize(entries_bytes);
  put_word(out.data(), kEntriesMessage);
  std::memcpy(out.data() + 4, index.data(), 4 * index.size());
  std::memcpy(out.data() + 4 + 4 * index.size(), codes.data(), codes.size());
}

std::vector<std::size_t> expand_sparse_messages(std::span<const std::byte> all,
                                                std::span<const std::size_t> sizes,
                                                std::size_t length, std::string_view what,
                                                std::vector<std::byte>& entries) {
  entries.clear();
  std::vector<std::size_t> counts(sizes.size());
  std::size_t at = 0;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    if (at + sizes[r] > all.size()) throw corrupt(what, r, "lies beyond the gathered bytes");
    counts[r] = expand_one(all.data() + at, sizes[r], length, what, r, entries);
    at += sizes[r];
  }
  return counts;
}

}  // namespace qccl
