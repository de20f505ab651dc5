// A collective call's fingerprint: the arguments that must agree on every
// rank (operation, algorithm, element count, reduction, root, sequence
// number), as a fixed number of int64 fields so every rank exchanges the same
// number of bytes even when the calls differ.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

class Fingerprint {
 public:
  static constexpr std::size_t kMaxFields = 8;

  explicit Fingerprint(std::string_view operation);
  Fingerprint& add(std::string_view name, std::int64_t value);
  // Text fields are compared by a 62-bit hash; messages show this rank's text.
  Fingerprint& add_text(std::string_view name, std::string_view text);

  std::string_view operation() const { return operation_; }
  std::size_t field_count() const { return count_; }
  std::string_view field_name(std::size_t i) const { return names_[i]; }
  std::int64_t field_value(std::size_t i) const { return values_[i]; }
  bool field_is_text(std::size_t i) const { return !texts_[i].empty(); }
  std::string_view field_text(std::size_t i) const { return texts_[i]; }

 private:
  std::string operation_;
  std::size_t count_ = 0;
  std::array<std::string, kMaxFields> names_;
  std::array<std::int64_t, kMaxFields> values_{};
  std::array<std::string, kMaxFields> texts_;
};

// 62-bit FNV-1a hash (non-negative, so it can be negated without overflow).
std::int64_t hash62(std::string_view text);
// The same over a list of sizes (e.g. per-rank counts).
std::int64_t hash62(std::span<const std::size_t> values);

}  // namespace qccl
QCCL_API_END
