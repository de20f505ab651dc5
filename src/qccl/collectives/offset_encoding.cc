#include "qccl/collectives/offset_encoding.h"

namespace qccl {
namespace {

// The forwarding shared by both views; `Base` is Encoding or Reduction.
template <typename Base>
class Offset : public Base {
 public:
  Offset(Encoding& whole, std::size_t first) : whole_(whole), first_(first) {}

  std::string name() const override { return whole_.name(); }
  std::size_t granularity() const override { return whole_.granularity(); }
  std::size_t max_encoded_bytes(std::size_t count) const override {
    return whole_.max_encoded_bytes(count);
  }
  bool identity_layout() const override { return whole_.identity_layout(); }
  std::optional<NativeReduction> native_equivalent() const override {
    return whole_.native_equivalent();
  }
  std::size_t encode(std::span<const float> in, std::size_t first,
                     std::span<std::byte> out) override {
    return whole_.encode(in, first_ + first, out);
  }
  void decode(std::span<const std::byte> in, std::size_t first, std::span<float> out) override {
    whole_.decode(in, first_ + first, out);
  }
  void decode_add(std::span<const std::byte> in, std::size_t first, std::span<float> out,
                  std::span<float> scratch) override {
    whole_.decode_add(in, first_ + first, out, scratch);
  }
  void decode_contribution(std::span<const std::byte> in, std::size_t first,
                           std::span<float> out) override {
    whole_.decode_contribution(in, first_ + first, out);
  }

 protected:
  Encoding& whole_;
  std::size_t first_;
};

class OffsetReduction final : public Offset<Reduction> {
 public:
  OffsetReduction(Reduction& whole, std::size_t first) : Offset(whole, first), reduction_(whole) {}

  std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                     std::size_t accum_bytes, const ReduceContext& context) override {
    ReduceContext moved = context;
    moved.first += first_;
    return reduction_.reduce(incoming, accum, accum_bytes, moved);
  }

 private:
  Reduction& reduction_;
};

}  // namespace

std::unique_ptr<Encoding> offset_encoding(Encoding& whole, std::size_t first) {
  if (Reduction* reduction = whole.in_transit()) {
    return std::make_unique<OffsetReduction>(*reduction, first);
  }
  return std::make_unique<Offset<Encoding>>(whole, first);
}

}  // namespace qccl
