// Time types shared by every layer: all waits take a Timeout.
#pragma once

#include <algorithm>
#include <chrono>
#include <string>

#include "qccl/common/export.h"

QCCL_API_BEGIN
namespace qccl {

using Clock = std::chrono::steady_clock;
using Timeout = std::chrono::milliseconds;

// The point `timeout` from now, saturating: Timeout::max() and other
// timeouts beyond a century mean a century, not an overflowed deadline in
// the past.
inline Clock::time_point deadline_after(Timeout timeout) {
  constexpr Timeout kCentury = std::chrono::hours(24 * 365 * 100);
  return Clock::now() + std::min(timeout, kCentury);
}

// Seconds from `from` to `to` (negative when `to` comes first).
inline double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Seconds from `start` until now.
inline double seconds_since(Clock::time_point start) {
  return seconds_between(start, Clock::now());
}

// What is left of a wait until `deadline`: zero once it has passed.
inline Timeout time_left(Clock::time_point deadline) {
  return std::max(Timeout(0), std::chrono::duration_cast<Timeout>(deadline - Clock::now()));
}

// When a piece of work ran, on the steady clock.
struct ClockSpan {
  Clock::time_point start{};
  Clock::time_point end{};
  double seconds() const { return seconds_between(start, end); }
};

// "1500 ms" — for error messages.
inline std::string to_string(Timeout t) { return std::to_string(t.count()) + " ms"; }

}  // namespace qccl
QCCL_API_END
