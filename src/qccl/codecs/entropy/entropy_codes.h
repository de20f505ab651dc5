// Lossless codes for the symbols of a quantizer (Q-GenX §3.2, Appendix K):
// a bit stream, canonical Huffman codes built from estimated symbol
// probabilities, and Elias recursive (omega) coding, the universal fallback
// that gives small symbols short codes when no probabilities are known.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace qccl {

// Writes bits most significant first into a byte span it does not own;
// put() returns false, writing nothing, once the span would overflow.
class BitWriter {
 public:
  explicit BitWriter(std::span<std::byte> out) : out_(out) {}
  // The low `count` bits of `value` (count <= 32).
  bool put(std::uint32_t value, int count);
  // Flushes the last partial byte (zero padded); returns the bytes used.
  std::size_t finish();
  std::uint64_t bits() const { return bits_; }

 private:
  std::span<std::byte> out_;
  std::size_t at_ = 0;      // next byte to write
  std::uint64_t acc_ = 0;   // pending bits, right aligned
  int pending_ = 0;         // how many
  std::uint64_t bits_ = 0;  // written so far
};

// Reads what a BitWriter wrote; reading past the end throws CommError
// naming `what` (a truncated or corrupt message).
class BitReader {
 public:
  BitReader(std::span<const std::byte> in, const char* what) : in_(in), what_(what) {}
  std::uint32_t get(int count);
  int bit() { return static_cast<int>(get(1)); }
  // Bytes read so far: all of them once the last symbol is read, if the
  // input held nothing after it but padding.
  std::size_t consumed() const { return at_; }

 private:
  std::span<const std::byte> in_;
  const char* what_;
  std::size_t at_ = 0;
  std::uint64_t acc_ = 0;
  int pending_ = 0;
};

// A canonical prefix code over symbols 0..n-1, every symbol with a code
// word of at most max_length bits. from_probabilities builds Huffman's code
// (Cover & Thomas §5.6; minimal expected length among symbol-by-symbol
// codes, E[L] < H + 1) from estimated probabilities, with every symbol kept
// encodable (a zero estimate gets the longest word), then limits lengths to
// max_length by lengthening the least probable short words until Kraft's
// inequality holds again.
class PrefixCode {
 public:
  static PrefixCode from_probabilities(std::span<const double> probabilities, int max_length);
  // From code lengths (a saved code); throws InvalidArgument unless they
  // form a complete-or-under-full prefix code of lengths 1..32.
  static PrefixCode from_lengths(std::vector<std::uint8_t> lengths);

  std::size_t symbols() const { return lengths_.size(); }
  const std::vector<std::uint8_t>& lengths() const { return lengths_; }
  int length(std::size_t symbol) const { return lengths_[symbol]; }
  bool put(BitWriter& out, std::size_t symbol) const {
    return out.put(codes_[symbol], lengths_[symbol]);
  }
  // Throws CommError for a bit pattern that is no code word.
  std::size_t get(BitReader& in) const;
  // Σ p_i · length_i.
  double expected_length(std::span<const double> probabilities) const;

 private:
  explicit PrefixCode(std::vector<std::uint8_t> lengths);
  std::vector<std::uint8_t> lengths_;
  std::vector<std::uint32_t> codes_;
  // Canonical decoding: for each length, the first code word and the index
  // into sorted_ of its first symbol, and how many words it has.
  std::vector<std::uint32_t> first_code_, first_index_, count_;
  std::vector<std::uint32_t> sorted_;  // symbols by (length, symbol)
};

// Elias omega ("recursive") code of n >= 1: 1 bit for n = 1, growing like
// log2 n + log2 log2 n + ... (Elias 1975).
bool put_elias_omega(BitWriter& out, std::uint32_t n);
std::uint32_t get_elias_omega(BitReader& in);
int elias_omega_length(std::uint32_t n);

// Entropy in bits of a distribution (terms with p = 0 add nothing).
double entropy_bits(std::span<const double> probabilities);

}  // namespace qccl
