// The learning rate of every step: a linear warm-up, then constant, cosine
// or linear decay to zero over the run's remaining steps. A pure function of
// the step, so a resumed run needs no extra state, and the codecs that need
// the *next* step size (IntSGD §4.1's α_{k+1}) can be told it exactly.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace qccl::engines {

struct LrSchedule {
  std::string shape = "constant";  // constant | cosine | linear
  double base = 0.05;
  std::size_t warmup_steps = 0;    // ramp from base/warmup to base
  std::size_t total_steps = 0;     // the whole run (decay reaches 0 here)
};

std::vector<std::string> lr_schedule_names();
// Throws InvalidArgument for an unknown shape or a warm-up not shorter than
// a decaying run.
void validate(const LrSchedule& schedule);
// The rate for step `step` (0-based).
double learning_rate(const LrSchedule& schedule, std::size_t step);

}  // namespace qccl::engines
