// Appending and reading back plain values, vectors and text of a state
// blob (codec state, the Q-GenX solver's checkpoints, the DDP hook's state):
// each vector and text is its uint64 length, then its bytes. The reader
// checks every length against what is left, and when the blob ends early or
// holds what cannot be, names the blob, what it was reading, and what to do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "qccl/common/errors.h"

namespace qccl {

class ByteWriter {
 public:
  template <typename T>
  void value(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof v);
  }
  template <typename T>
  void values(std::span<const T> v) {
    value<std::uint64_t>(v.size());
    const auto* p = reinterpret_cast<const std::byte*>(v.data());
    bytes_.insert(bytes_.end(), p, p + v.size_bytes());
  }
  template <typename T>
  void values(const std::vector<T>& v) {
    values(std::span<const T>(v));
  }
  void text(std::string_view s) { values(std::span<const char>(s.data(), s.size())); }
  // Bytes with no length before them.
  void bytes(std::span<const std::byte> b) { bytes_.insert(bytes_.end(), b.begin(), b.end()); }
  std::vector<std::byte> take() { return std::move(bytes_); }

 private:
  std::vector<std::byte> bytes_;
};

class ByteReader {
 public:
  // `what` names the blob in errors ("the Q-GenX solver state"); `remedy`
  // says what to do about a bad one ("was it saved by this version with
  // these settings?").
  ByteReader(std::span<const std::byte> bytes, std::string what,
             std::string remedy = "was it saved by this version with these settings?")
      : bytes_(bytes), what_(std::move(what)), remedy_(std::move(remedy)) {}

  template <typename T>
  T value(const char* field) {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    std::memcpy(&v, take(sizeof v, field).data(), sizeof v);
    return v;
  }
  template <typename T>
  std::vector<T> values(const char* field) {
    const auto count = value<std::uint64_t>(field);
    if (count > (bytes_.size() - offset_) / sizeof(T)) fail(field);
    std::vector<T> v(count);
    std::memcpy(v.data(), take(count * sizeof(T), field).data(), count * sizeof(T));
    return v;
  }
  std::string text(const char* field) {
    const auto v = values<char>(field);
    return std::string(v.begin(), v.end());
  }
  // `out.size()` bytes into `out`, with no length before them.
  void bytes(std::span<std::byte> out, const char* field) {
    if (out.empty()) return;  // nothing to copy (out.data() may be null)
    std::memcpy(out.data(), take(out.size(), field).data(), out.size());
  }
  std::span<const std::byte> rest() { return take(bytes_.size() - offset_, "the rest"); }
  std::size_t remaining() const { return bytes_.size() - offset_; }
  bool done() const { return offset_ == bytes_.size(); }
  [[noreturn]] void fail(const std::string& field) const {
    throw InvalidArgument(what_ + " is truncated or corrupt (reading " + field + "); " + remedy_);
  }

 private:
  std::span<const std::byte> take(std::size_t n, const char* field) {
    if (n > bytes_.size() - offset_) fail(field);
    const auto part = bytes_.subspan(offset_, n);
    offset_ += n;
    return part;
  }

  std::span<const std::byte> bytes_;
  std::string what_, remedy_;
  std::size_t offset_ = 0;
};

}  // namespace qccl
