#include "qccl/codecs/tensor_state.h"

#include <cstdint>
#include <cstring>

#include "qccl/common/byte_io.h"
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

template <class Map>
void write_buffers(ByteWriter& w, const Map& map, std::uint64_t kind) {
  for (const auto& [key, values] : map) {
    w.value(kind);
    w.text(key.first);
    w.text(key.second);
    w.values(values);
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
  ByteWriter w;
  w.text(kMagic);
  w.value<std::uint64_t>(size());
  write_buffers(w, doubles_, 1);
  write_buffers(w, floats_, 2);
  return w.take();
}

void TensorStateStore::load(std::span<const std::byte> bytes) {
  ByteReader r(bytes, "saved codec state", "was the checkpoint damaged?");
  if (r.text("the header") != kMagic) {
    throw InvalidArgument("saved codec state is not a qccl tensor state (was the checkpoint "
                          "written by another version, or damaged?)");
  }
  TensorStateStore loaded;
  const auto buffers = r.value<std::uint64_t>("the buffer count");
  for (std::uint64_t b = 0; b < buffers; ++b) {
    const auto kind = r.value<std::uint64_t>("a buffer kind");
    const std::string tensor = r.text("a tensor name"), field = r.text("a field name");
    const auto count = r.value<std::uint64_t>("a buffer length");
    const std::size_t width = kind == 1 ? sizeof(double) : sizeof(float);
    if (count > r.remaining() / width) r.fail("the values of " + tensor + " " + field);
    if (kind == 1) {
      r.bytes(std::as_writable_bytes(loaded.doubles(tensor, field, count)), "a buffer");
    } else if (kind == 2) {
      r.bytes(std::as_writable_bytes(loaded.floats(tensor, field, count)), "a buffer");
    } else {
      throw InvalidArgument("saved codec state has an unknown buffer kind " +
                            std::to_string(kind) + " (damaged?)");
    }
  }
  if (!r.done()) throw InvalidArgument("saved codec state has trailing bytes (damaged?)");
  *this = std::move(loaded);
}

}  // namespace qccl
