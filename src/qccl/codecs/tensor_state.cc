#include "qccl/codecs/tensor_state.h"

#include <cstdint>
#include <cstring>

#include "qccl/common/errors.h"

namespace qccl {
namespace {

template <class T, class Map>
std::span<T> buffer(Map& map, std::string_view tensor, std::string_view field, std::size_t count) {
  const std::pair<std::string, std::string> key{tensor, field};
  auto it = map.find(key);
  if (it == map.end()) it = map.emplace(key, std::vector<T>(count, T{0})).first;
  if (it->second.size() != count) {
    throw InvalidArgument("codec state '" + std::string(field) + "' of tensor '" +
                          std::string(tensor) + "' holds " + std::to_string(it->second.size()) +
                          " values, but the tensor now has " + std::to_string(count) +
                          " elements: was the model changed between steps or checkpoints?");
  }
  return it->second;
}

// Serialised form: "qccl-tensor-state-1", then per buffer: kind (1 = f64,
// 2 = f32), tensor name, field, count, values; lengths as uint64.
constexpr std::string_view kMagic = "qccl-tensor-state-1";

class Writer {
 public:
  void bytes(const void* data, std::size_t size) {
    const auto* p = static_cast<const std::byte*>(data);
    out_.insert(out_.end(), p, p + size);
  }
  void u64(std::uint64_t v) { bytes(&v, sizeof v); }
  void text(std::string_view s) {
    u64(s.size());
    bytes(s.data(), s.size());
  }
  std::vector<std::byte> take() { return std::move(out_); }

 private:
  std::vector<std::byte> out_;
};

class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : in_(in) {}
  void bytes(void* data, std::size_t size) {
    if (size > in_.size() - at_) {
      throw InvalidArgument("saved codec state is truncated (was the checkpoint damaged?)");
    }
    if (size == 0) return;  // a zero-element tensor: nothing to copy (data may be null)
    std::memcpy(data, in_.data() + at_, size);
    at_ += size;
  }
  std::uint64_t u64() {
    std::uint64_t v;
    bytes(&v, sizeof v);
    return v;
  }
  std::string text() {
    const std::uint64_t size = u64();
    if (size > in_.size() - at_) {
      throw InvalidArgument("saved codec state is truncated (was the checkpoint damaged?)");
    }
    std::string s(size, '\0');
    bytes(s.data(), size);
    return s;
  }
  bool done() const { return at_ == in_.size(); }
  std::size_t remaining() const { return in_.size() - at_; }

 private:
  std::span<const std::byte> in_;
  std::size_t at_ = 0;
};

template <class Map>
void write_buffers(Writer& w, const Map& map, std::uint64_t kind) {
  for (const auto& [key, values] : map) {
    w.u64(kind);
    w.text(key.first);
    w.text(key.second);
    w.u64(values.size());
    w.bytes(values.data(), values.size() * sizeof(values[0]));
  }
}

}  // namespace

std::span<double> TensorStateStore::doubles(std::string_view tensor, std::string_view field,
                                            std::size_t count) {
  return buffer<double>(doubles_, tensor, field, count);
}

std::span<float> TensorStateStore::floats(std::string_view tensor, std::string_view field,
                                          std::size_t count) {
  return buffer<float>(floats_, tensor, field, count);
}

bool TensorStateStore::contains(std::string_view tensor, std::string_view field) const {
  const std::pair<std::string, std::string> key{tensor, field};
  return doubles_.count(key) > 0 || floats_.count(key) > 0;
}

void TensorStateStore::clear() {
  doubles_.clear();
  floats_.clear();
}

std::vector<std::byte> TensorStateStore::save() const {
  Writer w;
  w.text(kMagic);
  w.u64(size());
  write_buffers(w, doubles_, 1);
  write_buffers(w, floats_, 2);
  return w.take();
}

void TensorStateStore::load(std::span<const std::byte> bytes) {
  Reader r(bytes);
  if (r.text() != kMagic) {
    throw InvalidArgument("saved codec state is not a qccl tensor state (was the checkpoint "
                          "written by another version, or damaged?)");
  }
  TensorStateStore loaded;
  const std::uint64_t buffers = r.u64();
  for (std::uint64_t b = 0; b < buffers; ++b) {
    const std::uint64_t kind = r.u64();
    const std::string tensor = r.text(), field = r.text();
    const std::uint64_t count = r.u64();
    const std::size_t width = kind == 1 ? sizeof(double) : sizeof(float);
    if (count > r.remaining() / width) {
      throw InvalidArgument("saved codec state is truncated (was the checkpoint damaged?)");
    }
    if (kind == 1) {
      auto values = loaded.doubles(tensor, field, count);
      r.bytes(values.data(), values.size_bytes());
    } else if (kind == 2) {
      auto values = loaded.floats(tensor, field, count);
      r.bytes(values.data(), values.size_bytes());
    } else {
      throw InvalidArgument("saved codec state has an unknown buffer kind " +
                            std::to_string(kind) + " (damaged?)");
    }
  }
  if (!r.done()) throw InvalidArgument("saved codec state has trailing bytes (damaged?)");
  *this = std::move(loaded);
}

}  // namespace qccl
