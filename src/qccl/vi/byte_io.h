// Appending and reading back plain values and vectors of a state blob
// (the solver's checkpoints). The reader checks every length and names what
// it was reading when the blob ends early.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "qccl/common/errors.h"

namespace qccl::vi {

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
  void text(const std::string& s) { values(std::span<const char>(s.data(), s.size())); }
  std::vector<std::byte> take() { return std::move(bytes_); }

 private:
  std::vector<std::byte> bytes_;
};

class ByteReader {
 public:
  // `what` names the blob in errors ("the Q-GenX solver state").
  ByteReader(std::span<const std::byte> bytes, std::string what)
      : bytes_(bytes), what_(std::move(what)) {}

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
  std::span<const std::byte> rest() { return take(bytes_.size() - offset_, "the rest"); }
  bool done() const { return offset_ == bytes_.size(); }
  [[noreturn]] void fail(const std::string& field) const {
    throw InvalidArgument(what_ + " is truncated or corrupt (reading " + field +
                          "); was it saved by this version with these settings?");
  }

 private:
  std::span<const std::byte> take(std::size_t n, const char* field) {
    if (n > bytes_.size() - offset_) fail(field);
    const auto part = bytes_.subspan(offset_, n);
    offset_ += n;
    return part;
  }

  std::span<const std::byte> bytes_;
  std::string what_;
  std::size_t offset_ = 0;
};

}  // namespace qccl::vi
