// Time types shared by every layer: all waits take a Timeout.
#pragma once

#include <chrono>
#include <string>

namespace qccl {

using Clock = std::chrono::steady_clock;
using Timeout = std::chrono::milliseconds;

// "1500 ms" — for error messages.
inline std::string to_string(Timeout t) { return std::to_string(t.count()) + " ms"; }

}  // namespace qccl
