// An ElementForm (collectives/element_form.h) run on the host, element by
// element, through the functions the device kernels run
// (codecs/kernels/element_ops.h): the reference that a device backend must
// equal and that tests compare with the encodings' own encode, reduce and
// decode, byte for byte. Chunks are laid out as the encodings lay them out
// (a header of ElementForm::header_bytes, then the elements' codes).
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "qccl/collectives/element_form.h"
#include "qccl/collectives/reduction.h"

namespace qccl {

// (form_payload_bytes, form_payload_offset and form_chunk_bytes are in
// element_form.h, public for DeviceVector implementations.)

// Calls body(block, offset, count) for each piece of the step's elements
// [first, first + count) that lies in one of an integer form's blocks
// (offset from `first`); for other forms, body(nullptr, 0, count) once.
template <class Body>
void for_each_form_block(const ElementForm& form, std::size_t first, std::size_t count, Body&& body) {
  if (form.block_count == 0) {
    body(static_cast<const IntegerBlock*>(nullptr), std::size_t{0}, count);
    return;
  }
  std::size_t l = 0;
  while (l + 1 < form.block_count && form.blocks[l + 1].first <= first) ++l;
  for (std::size_t done = 0; done < count; ++l) {
    const std::size_t end = l + 1 < form.block_count ? form.blocks[l + 1].first : first + count;
    const std::size_t piece = (end < first + count ? end : first + count) - (first + done);
    if (piece > 0) body(&form.blocks[l], done, piece);
    done += piece;
  }
}

// Whether the form's chunks are gathered and decoded rather than combined
// in transit (min-max's); then its codes are one rank's per element
// (form.ranks = 1) or, in a result, form.ranks ranks' one after another.
bool form_is_gathered(const ElementForm& form);
// A gathered form's chunk as its encoding sends it, for `count` elements
// from one rank's codes of them; returns its bytes. And one rank's codes
// from a received chunk, which is refused with CommError naming `codec`
// when malformed.
std::size_t gathered_chunk_from_codes(const ElementForm& form, std::span<const std::byte> codes,
                                      std::size_t count, std::span<std::byte> chunk);
void gathered_codes_from_chunk(const ElementForm& form, const std::string& codec,
                               std::span<const std::byte> chunk, std::size_t count,
                               std::span<std::byte> codes);

// The codes of elements [first, first + in.size()), no header.
void encode_payload_by_form(const ElementForm& form, std::span<const float> in, std::size_t first,
                            std::span<std::byte> payload);
// The values of codes (no header) of the vector's elements [first, first +
// out.size()) (form.vector_first added for the step's index) that stand for
// the complete mean.
void decode_payload_by_form(const ElementForm& form, std::span<const std::byte> payload,
                            std::size_t first, std::span<float> out);
// False where a summed integer code (IntSGD's) lies beyond n·c, as no
// complete valid sum can (the encoding's decode refuses it too); true for
// the other forms.
bool codes_within_bounds(const ElementForm& form, std::span<const std::byte> payload);
// Encodes elements [first, first + in.size()) into `out`; returns the bytes written.
std::size_t encode_by_form(const ElementForm& form, std::span<const float> in, std::size_t first,
                           std::span<std::byte> out);
// accum ⊕= incoming, as the encoding's reduce() at `context`; false where
// the encoding's reduce() would reject the result (a sum out of bounds).
bool reduce_by_form(const ElementForm& form, std::span<const std::byte> incoming,
                    std::span<std::byte> accum, const ReduceContext& context);
// The complete mean's values, and one rank's own encoding's values, of a
// chunk of elements [first, first + out.size()).
void decode_by_form(const ElementForm& form, std::span<const std::byte> in, std::size_t first,
                    std::span<float> out);
void decode_contribution_by_form(const ElementForm& form, std::span<const std::byte> in,
                                 std::size_t first, std::span<float> out);

}  // namespace qccl
