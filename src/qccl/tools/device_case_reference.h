// The CPU side of qccl-device-check's cases (device_cases.h): the inputs'
// parameters and each case's output from the CPU kernels (kernels.h). A
// file of its own, compiled by the host compiler: kernels.h speaks of
// _Float16, which the CUDA compiler's host pass does not take.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "qccl/collectives/element_form.h"
#include "qccl/common/counter_rng.h"

namespace qccl::tools {

// Two ranks' fp32 inputs (values over 40 binades, zeros of both signs).
struct HostCaseInputs {
  std::vector<float> x, y;
};
HostCaseInputs case_inputs(std::size_t count);

// What a step on 4 ranks would use: keys of the quantize stream of ranks 0
// and 1 and of the reduce stream of one hop; a first counter whose 32-bit
// hash input wraps; Global-QSGD's levels for 4 ranks (31 at 8 bits summed,
// 7 at 4 bits); IntSGD's scale.
inline constexpr CounterRng kRank0(7, 3, 1, 0, RngStream::quantize);
inline constexpr CounterRng kRank1(7, 3, 1, 1, RngStream::quantize);
inline constexpr CounterRng kHop(7, 3, 1, (std::uint64_t{1} << 16) | 0, RngStream::reduce);
inline constexpr std::uint64_t kFirst = (std::uint64_t{1} << 32) - 1000;
inline constexpr int kLevels8 = 31, kLevels4 = 7;
inline constexpr float kIntAlpha = 1 << 20;
// The int64 wire's scale, not an fp32 number (its rounding is in fp64),
// and its per-rank bound for 4 ranks.
inline constexpr double kWideAlpha = 1099511627776.3;  // 2^40 + 0.3
std::int64_t wide_clip();
inline constexpr int kRanksForHeadroom = 4;

// The global ∞-norm of both inputs, and levels / norm in fp32.
float inf_norm(const HostCaseInputs& in);
float scale_for(const HostCaseInputs& in, int levels);
// Min-max's range of x: its minimum and 255 / (max − min).
struct MinMaxParameters {
  double lo, scale;
};
MinMaxParameters minmax_parameters(const std::vector<float>& x);
// Min-max bucket records (minmax_records.h) of an 8-bit step: buckets of
// 1000 (records not aligned), rank 0 random rounding, rank 1 on the
// shifted lattice at ρ = kRecordShift, both decoded with that shift and
// averaged over the two ranks.
// The same with one range per vector (min-max's bucket=0) takes
// `per_range` = the input's length: on the device, the wide buckets' path
// (a range over many thread blocks).
inline constexpr std::size_t kRecordBucket = 1000;
inline constexpr double kRecordShift = -0.3125;
ElementForm records_form(int rank, std::size_t per_range = kRecordBucket);

// The CPU's encodings of one input, which the device reductions start from.
std::vector<std::int8_t> cpu_levels(const std::vector<float>& x, float scale, int levels, const CounterRng& rng);
std::vector<std::uint8_t> cpu_packed(const std::vector<float>& x, float scale, const CounterRng& rng);
std::vector<std::uint8_t> cpu_exp_codes(const HostCaseInputs& in, const std::vector<float>& x, const CounterRng& rng);
std::vector<std::int32_t> cpu_integers(const std::vector<float>& x, bool random, const CounterRng& rng);
std::vector<std::int64_t> cpu_wide_integers(const std::vector<float>& x, bool random, const CounterRng& rng);
// The two ranks' int64 integers (random rounding) summed, as a step's
// collective sums them on the host.
std::vector<std::int64_t> cpu_wide_sums(const HostCaseInputs& in);

enum class DeviceCaseKind {
  linear8_encode,
  linear8_sum_decode,
  linear8_average,
  linear4_encode,
  linear4_average_decode,
  exp_encode,
  exp_reduce_decode,
  minmax,
  minmax_records,
  minmax_one_range,
  intsgd_round,
  intsgd_sum_decode,
  intsgd_wide,
  fp16,
  fp32_sums,
  norms,
};
// The scaling the fp32 case sums with (fp32_mean.h: 3 ranks of values that
// could overflow, so 2^-2 on the wire and 4/3 at the end).
inline constexpr int kScaledFp32Ranks = 3;
// The case's output bytes from the CPU kernels.
std::vector<std::byte> cpu_reference(DeviceCaseKind kind, const HostCaseInputs& in);

// A status word appended to output bytes, as the cases compare them.
std::vector<std::byte> with_status(std::vector<std::byte> out, std::uint32_t flag);

}  // namespace qccl::tools
