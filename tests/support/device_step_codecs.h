// The codecs whose steps run on device data (CodecTraits::device_step), as
// the device-step tests run them. IntSGD's adaptive scheme takes its first
// step exactly (IntSGD §4.1, fp32) and its later ones as integers with one
// α per tensor (Algorithm 2): `feed` gives such a codec a layout of three
// tensors and an optimizer update, so that its next step is an integer one
// whose blocks of scales cross chunk and piece boundaries.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "patterns.h"
#include "qccl/codecs/codec.h"
#include "qccl/codecs/tensor_layout.h"

namespace qccl::test {

// Min-max (QSDP's buckets) is gathered, not combined in transit: 8-bit
// buckets of 1024, and buckets of odd sizes whose records are not aligned,
// with packed 4- and 3-bit indices and the lattice roundings.
inline std::vector<std::string> device_gathered_specs() {
  return {"minmax", "minmax:bits=4,bucket=111,rounding=shift",
          "minmax:bits=3,bucket=37,rounding=dither"};
}

// One range per vector (bucket=0): one bucket of the whole encoded vector,
// whose chunks the collective cuts anywhere.
inline std::vector<std::string> device_one_range_specs() {
  return {"minmax:bucket=0", "minmax:bits=3,bucket=0,rounding=shift"};
}

inline std::vector<std::string> device_step_specs() {
  std::vector<std::string> specs{"global-qsgd:bits=8", "global-qsgd:bits=4", "global-qsgd:dither=exp",
                                 "global-qsgd:bits=8,norm=2", "fp16", "fp32", "intsgd", "intsgd:wire=int32",
                                 "intsgd-heuristic", "intsgd-heuristic:round=deterministic,wire=int32",
                                 "intsgd:wire=int64", "intsgd-heuristic:round=deterministic,wire=int64"};
  for (std::string& spec : device_gathered_specs()) specs.push_back(std::move(spec));
  for (std::string& spec : device_one_range_specs()) specs.push_back(std::move(spec));
  return specs;
}

inline bool is_gathered(const std::string& spec) { return spec.starts_with("minmax"); }

// IntSGD's adaptive scheme (its first step exact, the later ones integers
// once fed).
inline bool adapts_to_the_optimizer(const std::string& spec) {
  return spec == "intsgd" || spec.starts_with("intsgd:");
}

// The specs that a process group moves as a whole vector (no hop-by-hop
// combining): summed, or (min-max) gathered.
inline std::vector<std::string> device_group_specs() {
  return {"global-qsgd:bits=8", "global-qsgd:bits=8,norm=2", "fp16", "fp32", "intsgd",
          "intsgd-heuristic:round=deterministic,wire=int32", "intsgd:wire=int64", "minmax",
          "minmax:bits=3,bucket=37,rounding=dither", "minmax:bits=4,bucket=0,rounding=dither"};
}

// Gives a codec that adapts to the optimizer a layout of three tensors of
// `length` elements in all and one observed update, the same on every
// rank; does nothing to the others. Call it on twin codecs alike.
inline void feed(Codec& codec, std::size_t length) {
  StepFeedback* feedback = codec.step_feedback();
  if (feedback == nullptr) return;
  const std::size_t third = length / 3;
  const std::vector<std::size_t> sizes = length < 3 ? std::vector<std::size_t>{length}
                                                    : std::vector<std::size_t>{third, third, length - 2 * third};
  codec.set_layout(TensorLayout::of_sizes(sizes));
  const auto update = make_vector(length, [](std::size_t i) {
    return 1e-3f * noise(100, i) * std::ldexp(1.0f, static_cast<int>(i % 5));
  });
  feedback->observe_step(0.05, update);
}

}  // namespace qccl::test
