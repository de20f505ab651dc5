#include "qccl/reports/label_room.h"

#include <algorithm>

namespace qccl::tools {
namespace {

constexpr double kSpacing = 1.5;  // kept clear around every label
constexpr double kAmbiguous = 6;  // a label beside its point keeps this far from other markers

}  // namespace

bool LabelRoom::box_free(const Box& box) const {
  if (!area.contains(box)) return false;
  const Box padded = box.grown(kSpacing);
  const auto hit = [&](const Box& other) { return padded.overlaps(other); };
  return std::none_of(obstacles.begin(), obstacles.end(), hit) &&
         std::none_of(labels.begin(), labels.end(), hit) &&
         std::none_of(leaders.begin(), leaders.end(),
                      [&](const auto& l) { return segment_hits_box(l.first, l.second, padded); });
}

bool LabelRoom::near_other_marker(const Box& box, Point at) const {
  const Box near = box.grown(kAmbiguous);
  return std::any_of(obstacles.begin(), obstacles.end(),
                     [&](const Box& o) { return !o.contains(at) && near.overlaps(o); });
}

bool LabelRoom::line_free(Point at, Point from, Point to) const {
  for (const auto& o : obstacles) {
    if (!o.contains(at) && segment_hits_box(from, to, o)) return false;
  }
  for (const auto& l : labels) {
    if (segment_hits_box(from, to, l)) return false;
  }
  return std::none_of(leaders.begin(), leaders.end(),
                      [&](const auto& l) { return segments_cross(from, to, l.first, l.second); });
}

bool LabelRoom::shuts_in(const Box& box, Point from, Point to) const {
  const bool line = from.x != to.x || from.y != to.y;
  for (const Point& p : waiting) {
    // Whether labels or lines (and the new ones, if `with_new`) cross the
    // vertical from p to `end`.
    const auto blocked = [&](double end, bool with_new) {
      const Point far{p.x, end};
      const auto hit = [&](const Box& b) { return segment_hits_box(p, far, b); };
      const auto crossed = [&](const auto& l) { return segments_cross(p, far, l.first, l.second); };
      return std::any_of(labels.begin(), labels.end(), hit) ||
             std::any_of(leaders.begin(), leaders.end(), crossed) ||
             (with_new && (hit(box) || (line && segments_cross(p, far, from, to))));
    };
    if (blocked(area.top, false) && blocked(area.bottom, false)) continue;
    if (blocked(area.top, true) && blocked(area.bottom, true)) return true;
  }
  return false;
}

}  // namespace qccl::tools
