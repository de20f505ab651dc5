#include "qccl/collectives/fingerprint.h"

#include "qccl/common/errors.h"

namespace qccl {

std::int64_t hash62(std::string_view text) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return static_cast<std::int64_t>(h >> 2);
}

std::int64_t hash62(std::span<const std::size_t> values) {
  std::uint64_t h = 1469598103934665603ULL;
  for (std::size_t v : values) h = (h ^ v) * 1099511628211ULL;
  return static_cast<std::int64_t>(h >> 2);
}

Fingerprint::Fingerprint(std::string_view operation) : operation_(operation) {
  add_text("operation", operation);
}

Fingerprint& Fingerprint::add(std::string_view name, std::int64_t value) {
  if (count_ == kMaxFields) {
    throw InvalidArgument("fingerprint of " + operation_ + " has more than " +
                          std::to_string(kMaxFields) + " fields");
  }
  names_[count_] = std::string(name);
  values_[count_] = value;
  ++count_;
  return *this;
}

Fingerprint& Fingerprint::add_text(std::string_view name, std::string_view text) {
  add(name, hash62(text));
  texts_[count_ - 1] = text.empty() ? std::string("(empty)") : std::string(text);
  return *this;
}

}  // namespace qccl
