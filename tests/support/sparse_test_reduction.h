// A test-only reduction whose encoded size changes as chunks are reduced:
// a chunk is [uint32 nnz][nnz × (uint32 offset, float value)], non-zeros
// only, summed by merging. Granularity 4, so chunk boundaries are checked.
// It exercises the collectives' codec path (encode, variable sizes, reduce
// per hop, decode) before any real codec exists.
#pragma once

#include <cstring>
#include <vector>

#include "qccl/collectives/reduction.h"
#include "qccl/common/errors.h"

namespace qccl::test {

class SparseTestReduction final : public Reduction {
 public:
  std::string name() const override { return "test-sparse-sum"; }
  std::size_t granularity() const override { return 4; }
  std::size_t max_encoded_bytes(std::size_t count) const override { return 4 + 8 * count; }

  std::size_t encode(std::span<const float> in, std::size_t first,
                     std::span<std::byte> out) override {
    check_granular(first);
    std::vector<Entry> entries;
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (in[i] != 0.0f) entries.push_back({static_cast<std::uint32_t>(i), in[i]});
    }
    return write(entries, out);
  }

  void decode(std::span<const std::byte> in, std::size_t first, std::span<float> out) override {
    check_granular(first);
    std::fill(out.begin(), out.end(), 0.0f);
    for (const Entry& e : read(in, out.size())) out[e.offset] = e.value;
  }

  void decode_contribution(std::span<const std::byte> in, std::size_t first,
                           std::span<float> out) override {
    decode(in, first, out);
  }

  std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                     std::size_t accum_bytes, const ReduceContext& context) override {
    check_granular(context.first);
    ++reductions;
    const auto a = read(accum.first(accum_bytes), context.count);
    const auto b = read(incoming, context.count);
    std::vector<Entry> merged;
    std::size_t i = 0, j = 0;
    while (i < a.size() || j < b.size()) {
      if (j == b.size() || (i < a.size() && a[i].offset < b[j].offset)) {
        merged.push_back(a[i++]);
      } else if (i == a.size() || b[j].offset < a[i].offset) {
        merged.push_back(b[j++]);
      } else {
        const float sum = a[i].value + b[j].value;
        if (sum != 0.0f) merged.push_back({a[i].offset, sum});
        ++i, ++j;
      }
    }
    return write(merged, accum);
  }

  int reductions = 0;

 private:
  struct Entry {
    std::uint32_t offset;
    float value;
  };

  void check_granular(std::size_t first) const {
    if (first % granularity() != 0) {
      throw CommError("test-sparse-sum: chunk starts at element " + std::to_string(first) +
                      ", not a multiple of the granularity");
    }
  }

  static std::size_t write(const std::vector<Entry>& entries, std::span<std::byte> out) {
    const auto nnz = static_cast<std::uint32_t>(entries.size());
    const std::size_t bytes = 4 + 8 * entries.size();
    if (out.size() < bytes) throw CommError("test-sparse-sum: output too small");
    std::memcpy(out.data(), &nnz, 4);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      std::memcpy(out.data() + 4 + 8 * i, &entries[i].offset, 4);
      std::memcpy(out.data() + 8 + 8 * i, &entries[i].value, 4);
    }
    return bytes;
  }

  static std::vector<Entry> read(std::span<const std::byte> in, std::size_t count) {
    std::uint32_t nnz = 0;
    if (in.size() < 4) throw CommError("test-sparse-sum: chunk shorter than its header");
    std::memcpy(&nnz, in.data(), 4);
    if (in.size() != 4 + 8 * static_cast<std::size_t>(nnz)) {
      throw CommError("test-sparse-sum: chunk of " + std::to_string(in.size()) +
                      " bytes does not hold " + std::to_string(nnz) + " entries");
    }
    std::vector<Entry> entries(nnz);
    for (std::size_t i = 0; i < nnz; ++i) {
      std::memcpy(&entries[i].offset, in.data() + 4 + 8 * i, 4);
      std::memcpy(&entries[i].value, in.data() + 8 + 8 * i, 4);
      if (entries[i].offset >= count || (i > 0 && entries[i].offset <= entries[i - 1].offset)) {
        throw CommError("test-sparse-sum: bad offset in chunk");
      }
    }
    return entries;
  }
};

}  // namespace qccl::test
