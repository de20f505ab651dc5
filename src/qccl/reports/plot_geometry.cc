#include "qccl/reports/plot_geometry.h"

#include <algorithm>
#include <utility>

namespace qccl::tools {

Point nearest_point(const Box& box, Point p) {
  return {std::clamp(p.x, box.left, box.right), std::clamp(p.y, box.top, box.bottom)};
}

// Liang–Barsky clipping: the segment a + t (b - a), t in [0, 1], is cut
// down by each of the box's four edges in turn; it enters the interior iff
// a stretch of positive length survives.
bool segment_hits_box(Point a, Point b, const Box& box) {
  double t0 = 0, t1 = 1;
  const double dx = b.x - a.x, dy = b.y - a.y;
  const std::pair<double, double> edges[] = {
      {-dx, a.x - box.left}, {dx, box.right - a.x}, {-dy, a.y - box.top}, {dy, box.bottom - a.y}};
  for (const auto& [p, q] : edges) {
    if (p == 0) {
      if (q <= 0) return false;  // parallel to this edge and outside (or on) it
      continue;
    }
    const double t = q / p;
    if (p < 0)
      t0 = std::max(t0, t);
    else
      t1 = std::min(t1, t);
    if (t0 >= t1) return false;
  }
  return t1 - t0 > 1e-9;
}

namespace {
double cross(Point o, Point a, Point b) {
  return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
}
}  // namespace

bool segments_cross(Point a, Point b, Point c, Point d) {
  const double d1 = cross(c, d, a), d2 = cross(c, d, b), d3 = cross(a, b, c), d4 = cross(a, b, d);
  return ((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0));
}

}  // namespace qccl::tools
