// Points, axis-aligned boxes and segments in SVG pixels (y grows
// downwards), and the tests the label placement makes with them.
#pragma once

namespace qccl::tools {

struct Point {
  double x = 0, y = 0;
};

struct Box {
  double left = 0, top = 0, right = 0, bottom = 0;

  double width() const { return right - left; }
  double height() const { return bottom - top; }
  Box grown(double margin) const {
    return {left - margin, top - margin, right + margin, bottom + margin};
  }
  // Overlapping interiors: boxes that only touch do not overlap.
  bool overlaps(const Box& other) const {
    return left < other.right && other.left < right && top < other.bottom && other.top < bottom;
  }
  bool contains(Point p) const { return p.x >= left && p.x <= right && p.y >= top && p.y <= bottom; }
  bool contains(const Box& other) const {
    return other.left >= left && other.right <= right && other.top >= top && other.bottom <= bottom;
  }
};

// The point of `box` (its edge or inside) nearest to `p`.
Point nearest_point(const Box& box, Point p);

// Whether the segment a–b passes through the interior of `box`.
bool segment_hits_box(Point a, Point b, const Box& box);

// Whether the segments a–b and c–d cross (touching ends do not count).
bool segments_cross(Point a, Point b, Point c, Point d);

}  // namespace qccl::tools
