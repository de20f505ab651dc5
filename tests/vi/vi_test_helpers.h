// Shorthands for the tests of src/qccl/vi: problems and solver settings by
// position (a partial designated initializer trips -Wmissing-field-initializers).
#pragma once

#include <cstdint>
#include <vector>

#include "qccl/experiments/qgenx/problems.h"
#include "qccl/experiments/qgenx/qgenx_solver.h"

namespace qccl::vi {

inline Problem bilinear(std::size_t n, double alpha, std::uint64_t seed, double singular_max = 1.0,
                        double solution_scale = 1.0, double singular_min = 0.5) {
  BilinearSettings s;
  s.n = n;
  s.regularization = alpha;
  s.seed = seed;
  s.singular_min = singular_min;
  s.singular_max = singular_max;
  s.solution_scale = solution_scale;
  return make_bilinear_game(s);
}

inline Problem quadratic(std::size_t n, double mu, std::size_t rank, std::uint64_t seed,
                         double curvature = 1.0) {
  QuadraticSettings s;
  s.n = n;
  s.strong_monotonicity = mu;
  s.rank = rank;
  s.seed = seed;
  s.curvature = curvature;
  return make_quadratic_game(s);
}

inline SolverSettings solver_settings(Method method, StepRule rule = StepRule::adaptive,
                                      double step_base = 1.0, std::vector<double> anchor = {}) {
  SolverSettings s;
  s.method = method;
  s.step_rule = rule;
  s.step_base = step_base;
  s.anchor = std::move(anchor);
  return s;
}

}  // namespace qccl::vi
