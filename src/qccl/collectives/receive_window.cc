#include "qccl/collectives/receive_window.h"

namespace qccl {

std::size_t receive_window(const CollectiveOptions& options, const SlotLayout& layout) {
  if (options.window > 0) return static_cast<std::size_t>(options.window);
  for (std::size_t i = 0; i < layout.slot_count(); ++i) {
    const Slot& slot = layout.slot(i);
    if (slot.capacity != layout.max_slot_capacity() || slot.elements.count == 0) continue;
    return slot.capacity >= sizeof(float) * slot.elements.count ? kUncompressedWindow
                                                                : kCompressedWindow;
  }
  return kCompressedWindow;
}

}  // namespace qccl
