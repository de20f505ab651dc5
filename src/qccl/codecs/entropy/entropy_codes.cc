#include "qccl/codecs/entropy/entropy_codes.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <queue>
#include <string>

#include "qccl/common/errors.h"

namespace qccl {

bool BitWriter::put(std::uint32_t value, int count) {
  // Room for these bits and the padding of a last partial byte.
  if (at_ + static_cast<std::size_t>(pending_ + count + 7) / 8 > out_.size()) return false;
  const std::uint64_t mask = count == 32 ? 0xFFFFFFFFULL : ((1ULL << count) - 1);
  acc_ = (acc_ << count) | (value & mask);
  pending_ += count;
  bits_ += static_cast<std::uint64_t>(count);
  while (pending_ >= 8) {
    pending_ -= 8;
    out_[at_++] = static_cast<std::byte>((acc_ >> pending_) & 0xFF);
  }
  acc_ &= (1ULL << pending_) - 1;
  return true;
}

std::size_t BitWriter::finish() {
  if (pending_ > 0) {
    out_[at_++] = static_cast<std::byte>((acc_ << (8 - pending_)) & 0xFF);
    pending_ = 0;
    acc_ = 0;
  }
  return at_;
}

std::uint32_t BitReader::get(int count) {
  while (pending_ < count) {
    if (at_ >= in_.size()) {
      throw CommError(std::string(what_) + ": the encoded symbols end early (truncated or "
                      "corrupt message)");
    }
    acc_ = (acc_ << 8) | static_cast<std::uint64_t>(in_[at_++]);
    pending_ += 8;
  }
  pending_ -= count;
  const std::uint64_t mask = count == 32 ? 0xFFFFFFFFULL : ((1ULL << count) - 1);
  const auto value = static_cast<std::uint32_t>((acc_ >> pending_) & mask);
  acc_ &= (1ULL << pending_) - 1;
  return value;
}

namespace {

// Huffman's code lengths for weights w (all > 0): merge the two lightest
// subtrees until one is left; a symbol's length is its leaf's depth. Ties
// break on the lower node index, so every rank builds the same code.
std::vector<int> huffman_lengths(std::span<const double> w) {
  const std::size_t n = w.size();
  if (n == 1) return {1};
  using Node = std::pair<double, std::size_t>;
  std::priority_queue<Node, std::vector<Node>, std::greater<>> heap;
  std::vector<std::size_t> parent(2 * n - 1, 0);
  for (std::size_t i = 0; i < n; ++i) heap.push({w[i], i});
  std::size_t next = n;
  while (heap.size() > 1) {
    const Node a = heap.top();
    heap.pop();
    const Node b = heap.top();
    heap.pop();
    parent[a.second] = parent[b.second] = next;
    heap.push({a.first + b.first, next++});
  }
  const std::size_t root = next - 1;
  std::vector<int> depth(2 * n - 1, 0);
  for (std::size_t node = root; node-- > 0;) depth[node] = depth[parent[node]] + 1;
  return {depth.begin(), depth.begin() + static_cast<std::ptrdiff_t>(n)};
}

// Lengths clamped to `limit`, then the Kraft sum (in units of 2^-limit)
// brought back to at most 1 by lengthening the least probable words that
// can still grow, then shortened greedily, most probable first, where the
// sum has room.
void limit_lengths(std::vector<int>& lengths, std::span<const double> p, int limit) {
  const std::uint64_t capacity = 1ULL << limit;
  std::uint64_t kraft = 0;
  for (int& l : lengths) {
    l = std::min(l, limit);
    kraft += 1ULL << (limit - l);
  }
  std::vector<std::size_t> by_probability(lengths.size());
  std::iota(by_probability.begin(), by_probability.end(), std::size_t{0});
  std::stable_sort(by_probability.begin(), by_probability.end(),
                   [&](std::size_t a, std::size_t b) { return p[a] > p[b]; });
  while (kraft > capacity) {
    for (auto it = by_probability.rbegin(); it != by_probability.rend(); ++it) {
      int& l = lengths[*it];
      if (l >= limit) continue;
      kraft -= 1ULL << (limit - l - 1);
      ++l;
      break;
    }
  }
  for (std::size_t i : by_probability) {
    int& l = lengths[i];
    while (l > 1 && kraft + (1ULL << (limit - l)) <= capacity) {
      kraft += 1ULL << (limit - l);
      --l;
    }
  }
}

}  // namespace

PrefixCode PrefixCode::from_probabilities(std::span<const double> probabilities, int max_length) {
  const std::size_t n = probabilities.size();
  if (n == 0 || max_length > 32 || (1ULL << max_length) < n) {
    throw InvalidArgument("prefix code: " + std::to_string(n) + " symbols cannot have words of at "
                          "most " + std::to_string(max_length) + " bits");
  }
  // A symbol estimated never to occur still needs a word: it gets a weight
  // far below every other, so it ends among the longest.
  double total = 0;
  for (double p : probabilities) total += std::max(p, 0.0);
  std::vector<double> w(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double p = total > 0 ? std::max(probabilities[i], 0.0) / total : 1.0 / n;
    w[i] = p + 1e-12;
  }
  std::vector<int> lengths = huffman_lengths(w);
  limit_lengths(lengths, w, max_length);
  std::vector<std::uint8_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(lengths[i]);
  return PrefixCode(std::move(out));
}

PrefixCode PrefixCode::from_lengths(std::vector<std::uint8_t> lengths) {
  double kraft = 0;
  for (std::uint8_t l : lengths) {
    if (l < 1 || l > 32) {
      throw InvalidArgument("prefix code: a code word of " + std::to_string(l) +
                            " bits (valid: 1 to 32)");
    }
    kraft += std::ldexp(1.0, -l);
  }
  if (lengths.empty() || kraft > 1.0) {
    throw InvalidArgument("prefix code: the lengths break Kraft's inequality (sum " +
                          std::to_string(kraft) + " > 1), so they are no prefix code");
  }
  return PrefixCode(std::move(lengths));
}

// Canonical code words (Schwartz & Kallick): symbols sorted by (length,
// symbol) take consecutive values, shifted left whenever the length grows.
PrefixCode::PrefixCode(std::vector<std::uint8_t> lengths)
    : lengths_(std::move(lengths)), codes_(lengths_.size()), first_code_(33, 0),
      first_index_(33, 0), count_(33, 0), sorted_(lengths_.size()) {
  std::iota(sorted_.begin(), sorted_.end(), 0U);
  std::stable_sort(sorted_.begin(), sorted_.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return lengths_[a] < lengths_[b]; });
  std::uint32_t code = 0;
  int previous = lengths_[sorted_[0]];
  for (std::size_t k = 0; k < sorted_.size(); ++k) {
    const int l = lengths_[sorted_[k]];
    code <<= (l - previous);
    previous = l;
    if (count_[static_cast<std::size_t>(l)]++ == 0) {
      first_code_[static_cast<std::size_t>(l)] = code;
      first_index_[static_cast<std::size_t>(l)] = static_cast<std::uint32_t>(k);
    }
    codes_[sorted_[k]] = code++;
  }
}

std::size_t PrefixCode::get(BitReader& in) const {
  std::uint32_t code = 0;
  for (std::size_t l = 1; l <= 32; ++l) {
    code = (code << 1) | static_cast<std::uint32_t>(in.bit());
    if (count_[l] != 0 && code - first_code_[l] < count_[l] && code >= first_code_[l]) {
      return sorted_[first_index_[l] + (code - first_code_[l])];
    }
  }
  throw CommError("prefix code: a bit pattern that is no code word (corrupt message)");
}

double PrefixCode::expected_length(std::span<const double> probabilities) const {
  double sum = 0;
  for (std::size_t i = 0; i < lengths_.size() && i < probabilities.size(); ++i) {
    sum += probabilities[i] * lengths_[i];
  }
  return sum;
}

// n's groups from the last (n itself) back to the first, each written in
// binary with its leading 1, then a 0 (Elias 1975, the omega code).
bool put_elias_omega(BitWriter& out, std::uint32_t n) {
  std::uint32_t groups[6];
  int count = 0;
  for (std::uint32_t v = n; v > 1; v = static_cast<std::uint32_t>(std::bit_width(v) - 1)) {
    groups[count++] = v;
  }
  for (int k = count - 1; k >= 0; --k) {
    if (!out.put(groups[k], std::bit_width(groups[k]))) return false;
  }
  return out.put(0, 1);
}

std::uint32_t get_elias_omega(BitReader& in) {
  std::uint32_t n = 1;
  while (in.bit() == 1) {
    if (n > 31) throw CommError("Elias omega code: a number beyond 32 bits (corrupt message)");
    const std::uint32_t rest = in.get(static_cast<int>(n));
    n = static_cast<std::uint32_t>((1ULL << n) | rest);
  }
  return n;
}

int elias_omega_length(std::uint32_t n) {
  int length = 1;
  for (std::uint32_t v = n; v > 1; v = static_cast<std::uint32_t>(std::bit_width(v) - 1)) {
    length += std::bit_width(v);
  }
  return length;
}

double entropy_bits(std::span<const double> probabilities) {
  double h = 0;
  for (double p : probabilities) {
    if (p > 0) h -= p * std::log2(p);
  }
  return h;
}

}  // namespace qccl
