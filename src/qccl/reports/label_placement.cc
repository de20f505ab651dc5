#include "qccl/reports/label_placement.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <numeric>
#include <utility>

#include "qccl/reports/label_room.h"
#include "qccl/reports/plot_text.h"

namespace qccl::tools {
namespace {

constexpr double kGap = 2;           // between a point's marker and its label beside it
constexpr double kRingStep = 6;      // pixels between the rings searched for a free spot
constexpr double kCrowdRadius = 40;  // points nearer than this count as crowding a point
constexpr double kLongest = 0.75;    // of the area's width: longer labels are shortened
constexpr int kRetries = 4;          // placements per order, the labels left out moved first

// Directions tried around a point, in degrees (y grows downwards): beside
// it first, then above and below, then the diagonals and between.
constexpr double kBeside[] = {0, 180, -90, 90, -45, 45, -135, 135};
constexpr double kAround[] = {-90,   90,     -45,  -135,  45,    135,    0,    180,
                              -67.5, -112.5, 67.5, 112.5, -22.5, -157.5, 22.5, 157.5};

// A box of `size` whose nearest side or corner is at `target`, as seen
// from a point in direction `degrees`: to the right of it when the
// direction points right, above it when the direction points up. Along an
// axis the direction hardly moves along, `shift` says where the box lies:
// centred on the target (0), after it (1) or before it (-1).
Box box_towards(Point target, double degrees, const Box& size, int shift = 0) {
  const double c = std::cos(degrees * std::numbers::pi / 180);
  const double s = std::sin(degrees * std::numbers::pi / 180);
  const double w = size.width(), h = size.height();
  const auto beside = [&](double at, double length) {
    return shift == 0 ? at - length / 2 : shift > 0 ? at : at - length;
  };
  const double left = c > 0.35 ? target.x : c < -0.35 ? target.x - w : beside(target.x, w);
  const double top = s > 0.35 ? target.y : s < -0.35 ? target.y - h : beside(target.y, h);
  return {left, top, left + w, top + h};
}

Point along(Point at, double degrees, double distance) {
  return {at.x + distance * std::cos(degrees * std::numbers::pi / 180),
          at.y + distance * std::sin(degrees * std::numbers::pi / 180)};
}

// Where the line from the centre `at` towards `to` leaves the square of
// half side `clearance` around it.
Point marker_edge(Point at, Point to, double clearance) {
  const double dx = to.x - at.x, dy = to.y - at.y, longest = std::max(std::abs(dx), std::abs(dy));
  if (longest <= clearance) return at;
  return {at.x + dx * clearance / longest, at.y + dy * clearance / longest};
}

// The first free spot for one label: beside its point, else on rings ever
// further out (with a line back to the point that crosses nothing). Off
// to a side, a label lies towards the middle of the points (`inwards`: +1
// to the right) if it can: labels then stack like stairs above a row of
// points, their lines side by side.
PlacedLabel place_one(const LabelRequest& request, const Box& size, const LabelRoom& room,
                      double farthest, int inwards) {
  PlacedLabel label;
  const double beside = request.clearance + kGap;
  for (double degrees : kBeside) {
    const Box box = box_towards(along(request.at, degrees, beside), degrees, size);
    if (room.box_free(box) && !room.near_other_marker(box, request.at) &&
        !room.shuts_in(box, request.at, request.at)) {
      label.placed = true;
      label.box = box;
      return label;
    }
  }
  for (double r = beside + 2 * kRingStep; r <= farthest; r += kRingStep) {
    for (double degrees : kAround) {
      for (int shift : {inwards, -inwards, 0}) {
        const Box box = box_towards(along(request.at, degrees, r), degrees, size, shift);
        if (!room.box_free(box)) continue;
        const Point to = nearest_point(box, request.at);
        const Point from = marker_edge(request.at, to, request.clearance);
        if (!room.line_free(request.at, from, to) || room.shuts_in(box, from, to)) continue;
        label = {true, {}, {}, box, true, from, to};
        return label;
      }
    }
  }
  return label;
}

// The mean x of the points.
double middle_x(const std::vector<LabelRequest>& requests) {
  double middle = 0;
  for (const auto& r : requests) middle += r.at.x / static_cast<double>(requests.size());
  return middle;
}

// The labels placed one at a time, in `order`.
std::vector<PlacedLabel> place_in_order(const std::vector<LabelRequest>& requests,
                                        const std::vector<std::size_t>& order, const Box& area,
                                        const std::vector<Box>& obstacles, double font_size) {
  const double middle = middle_x(requests);
  LabelRoom room{area, obstacles, {}, {}, {}};
  for (std::size_t i : order) room.waiting.push_back(requests[i].at);
  const double farthest = std::hypot(area.width(), area.height());
  std::vector<PlacedLabel> placed(requests.size());
  for (std::size_t i : order) {
    room.waiting.erase(room.waiting.begin());
    // The whole text if it finds room, else its start, at most kLongest of the area.
    PlacedLabel label;
    for (const auto& text :
         {requests[i].text,
          shortened_to_fit(requests[i].text, kLongest * area.width(), font_size)}) {
      const Box size = text_box(text, 0, 0, font_size, Anchor::start);
      label = place_one(requests[i], size, room, farthest, requests[i].at.x < middle ? 1 : -1);
      if (!label.placed) continue;
      label.text = text;
      label.baseline = {label.box.left - size.left, label.box.top - size.top};
      break;
    }
    if (!label.placed) continue;
    room.labels.push_back(label.box);
    if (label.leader) room.leaders.emplace_back(label.leader_from, label.leader_to);
    placed[i] = label;
  }
  return placed;
}

// Better placements place more labels, then need shorter lines.
std::pair<std::size_t, double> badness(const std::vector<PlacedLabel>& labels) {
  std::size_t missing = 0;
  double lines = 0;
  for (const auto& label : labels) {
    missing += !label.placed;
    if (label.leader) {
      lines += std::hypot(label.leader_to.x - label.leader_from.x,
                          label.leader_to.y - label.leader_from.y);
    }
  }
  return {missing, lines};
}

// The orders tried: from the middle of the points outwards (so that the
// labels nearest the middle take the spots nearest the points, and the
// outer ones the stairs above them); the most crowded points first (they
// have the fewest free spots beside them); from left to right; from right
// to left.
std::vector<std::vector<std::size_t>> orders(const std::vector<LabelRequest>& requests) {
  const std::size_t n = requests.size();
  const double middle = middle_x(requests);
  std::vector<std::size_t> crowding(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto& other : requests) {
      const double dx = other.at.x - requests[i].at.x, dy = other.at.y - requests[i].at.y;
      if (dx * dx + dy * dy < kCrowdRadius * kCrowdRadius) ++crowding[i];
    }
  }
  const auto x = [&](std::size_t i) { return requests[i].at.x; };
  const std::vector<std::function<bool(std::size_t, std::size_t)>> before = {
      [&](std::size_t a, std::size_t b) {
        return std::abs(x(a) - middle) < std::abs(x(b) - middle);
      },
      [&](std::size_t a, std::size_t b) {
        return crowding[a] != crowding[b] ? crowding[a] > crowding[b] : x(a) < x(b);
      },
      [&](std::size_t a, std::size_t b) { return x(a) < x(b); },
      [&](std::size_t a, std::size_t b) { return x(a) > x(b); }};
  std::vector<std::vector<std::size_t>> out;
  for (const auto& less : before) {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), less);
    out.push_back(std::move(order));
  }
  return out;
}

}  // namespace

// The labels are placed one at a time, greedily. Each takes the first free
// spot in a fixed order of candidates: the eight spots touching its
// marker, then rings around the point ever further out, each ring tried
// above and below before the sides; a label away from its point gets a
// line to it, which may cross no marker, label or other line. No label may
// take a spot that leaves a point still to come with labels in the way
// both straight above and straight below it. Which labels go first decides
// what is left for the others, so several orders are tried (see orders())
// and the result that places the most labels with the shortest lines kept.
std::vector<PlacedLabel> place_labels(const std::vector<LabelRequest>& requests, const Box& area,
                                      const std::vector<Box>& obstacles, double font_size) {
  std::vector<PlacedLabel> best;
  for (auto order : orders(requests)) {
    for (int round = 0; round < kRetries; ++round) {
      const auto placed = place_in_order(requests, order, area, obstacles, font_size);
      if (best.empty() || badness(placed) < badness(best)) best = placed;
      if (badness(placed).first == 0) break;
      // The labels left out go first next time (the others keep their order).
      std::stable_partition(order.begin(), order.end(),
                            [&](std::size_t i) { return !placed[i].placed; });
    }
  }
  return best;
}

}  // namespace qccl::tools
