#include "qccl/tools/device_case_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "qccl/codecs/fp32_mean.h"
#include "qccl/codecs/kernels/kernels.h"
#include "qccl/codecs/levels.h"
#include "qccl/codecs/minmax_records.h"
#include "qccl/codecs/quantizers/exp_dither.h"
#include "qccl/codecs/quantizers/int_rounding.h"

namespace qccl::tools {
namespace {

template <class T>
std::vector<std::byte> bytes_of(const std::vector<T>& values) {
  std::vector<std::byte> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<float> values_over_binades(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  const CounterRng rng(seed, 0, 0, 0, RngStream::data);
  for (std::size_t i = 0; i < n; ++i) {
    const float unit = rng.uniform(i) * 2 - 1;
    v[i] = i % 97 == 0 ? (i % 2 ? -0.0f : 0.0f) : std::ldexp(unit, static_cast<int>(i % 41) - 20);
  }
  return v;
}

std::vector<std::byte> linear8_sum_decode(const HostCaseInputs& in) {
  const float scale = scale_for(in, kLevels8);
  auto a = cpu_levels(in.x, scale, kLevels8, kRank0);
  const auto b = cpu_levels(in.y, scale, kLevels8, kRank1);
  const bool ok = kernels::add_i8_checked(a.data(), b.data(), a.size(), 2 * kLevels8);
  std::vector<float> out(a.size());
  kernels::linear_decode_i8(a.data(), out.data(), a.size(), inf_norm(in) / (2.0f * kLevels8));
  return with_status(bytes_of(out), ok ? 0 : 1);
}

std::vector<std::byte> linear8_average(const HostCaseInputs& in) {
  const float scale = scale_for(in, 127);
  const auto a = cpu_levels(in.x, scale, 127, kRank0), b = cpu_levels(in.y, scale, 127, kRank1);
  std::vector<std::int8_t> out(a.size());
  kernels::average_i8(a.data(), b.data(), out.data(), a.size(), 3, 1, kHop.key_low(), kHop.key_high(), kFirst);
  return bytes_of(out);
}

std::vector<std::byte> linear4_average_decode(const HostCaseInputs& in) {
  const float scale = scale_for(in, kLevels4);
  const auto a = cpu_packed(in.x, scale, kRank0), b = cpu_packed(in.y, scale, kRank1);
  std::vector<std::int8_t> qa(in.x.size()), qb(in.x.size());
  kernels::unpack_i4(a.data(), qa.data(), qa.size());
  kernels::unpack_i4(b.data(), qb.data(), qb.size());
  kernels::average_i8(qa.data(), qb.data(), qa.data(), qa.size(), 1, 1, kHop.key_low(), kHop.key_high(), kFirst);
  std::vector<std::uint8_t> packed(a.size());
  kernels::pack_i4(qa.data(), packed.data(), qa.size());
  std::vector<float> out(qa.size());
  kernels::linear_decode_i4(packed.data(), out.data(), out.size(), inf_norm(in) / kLevels4);
  return bytes_of(out);
}

std::vector<std::byte> exp_reduce_decode(const HostCaseInputs& in) {
  auto a = cpu_exp_codes(in, in.x, kRank0);
  const auto b = cpu_exp_codes(in, in.y, kRank1);
  const bool ok = kernels::exp_reduce(a.data(), b.data(), a.size(), kHop.key_low(), kHop.key_high(), kFirst);
  std::vector<float> out(a.size());
  kernels::exp_decode(a.data(), out.data(), a.size(), exp_dither::headroom(kRanksForHeadroom, true), inf_norm(in) / 2);
  return with_status(bytes_of(out), ok ? 0 : 1);
}

// Min-max codes, lattice codes and y + decoded codes, in that order of bytes.
std::vector<std::byte> minmax(const HostCaseInputs& in) {
  const auto [lo, scale] = minmax_parameters(in.x);
  std::vector<std::uint8_t> q(in.x.size()), lattice(in.x.size());
  kernels::minmax_encode_u8(in.x.data(), q.data(), q.size(), lo, scale, 255, kRank0.key_low(), kRank0.key_high(), kFirst);
  kernels::lattice_encode_u8(in.x.data(), lattice.data(), q.size(), lo, scale, 0.5 - 0.1875, 255);
  std::vector<float> out = in.y;
  kernels::affine_decode_add_u8(q.data(), out.data(), q.size(), lo, 1 / scale);
  auto bytes = bytes_of(out);
  for (const auto& b : {bytes_of(q), bytes_of(lattice)}) bytes.insert(bytes.end(), b.begin(), b.end());
  return bytes;
}

std::vector<std::byte> intsgd_round(const HostCaseInputs& in) {
  auto bytes = bytes_of(cpu_integers(in.x, true, kRank0));
  const auto deterministic = bytes_of(cpu_integers(in.x, false, kRank0));
  bytes.insert(bytes.end(), deterministic.begin(), deterministic.end());
  return bytes;
}

std::vector<std::byte> intsgd_sum_decode(const HostCaseInputs& in) {
  auto a = cpu_integers(in.x, true, kRank0);
  const auto b = cpu_integers(in.y, true, kRank1);
  const bool ok = kernels::add_i32_checked(a.data(), b.data(), a.size(), 1 << 29);
  std::vector<float> out(a.size());
  const auto largest = kernels::int_decode_i32(a.data(), out.data(), a.size(), 1 / (2 * kIntAlpha));
  return with_status(with_status(bytes_of(out), ok ? 0 : 1), static_cast<std::uint32_t>(largest));
}

// The int64 wire: rank 0's integers (random, then to nearest) by the
// host codec's rounding (round_scaled), then the two ranks' sum decoded in
// fp64 and saturated to fp32, as the host codec decodes it.
std::vector<std::byte> intsgd_wide(const HostCaseInputs& in) {
  auto bytes = bytes_of(cpu_wide_integers(in.x, true, kRank0));
  const auto deterministic = bytes_of(cpu_wide_integers(in.x, false, kRank0));
  bytes.insert(bytes.end(), deterministic.begin(), deterministic.end());
  const auto sums = cpu_wide_sums(in);
  std::vector<float> out(sums.size());
  for (std::size_t i = 0; i < sums.size(); ++i) {
    out[i] = saturate_to_fp32(static_cast<double>(sums[i]) * (1 / (2 * kWideAlpha)));
  }
  const auto values = bytes_of(out);
  bytes.insert(bytes.end(), values.begin(), values.end());
  return bytes;
}

std::vector<std::byte> fp16(const HostCaseInputs& in) {
  std::vector<_Float16> a(in.x.size()), b(in.x.size());
  kernels::fp16_encode(in.x.data(), a.data(), a.size(), 0.5f);
  kernels::fp16_encode(in.y.data(), b.data(), b.size(), 0.5f);
  kernels::fp16_add(a.data(), b.data(), a.size());
  std::vector<float> out(a.size());
  kernels::fp16_decode(a.data(), out.data(), a.size());
  return bytes_of(out);
}

std::vector<std::byte> norms(const HostCaseInputs& in) {
  const double squares = kernels::sum_of_squares(in.x.data(), in.x.size());
  return with_status(bytes_of(std::vector<double>{squares}), kernels::max_abs_bits(in.x.data(), in.x.size()));
}

}  // namespace

HostCaseInputs case_inputs(std::size_t count) {
  return {values_over_binades(count, 1), values_over_binades(count, 2)};
}

float inf_norm(const HostCaseInputs& in) {
  const std::uint32_t largest = std::max(kernels::max_abs_bits(in.x.data(), in.x.size()),
                                         kernels::max_abs_bits(in.y.data(), in.y.size()));
  float norm;
  std::memcpy(&norm, &largest, 4);
  return norm;
}

float scale_for(const HostCaseInputs& in, int levels) {
  return static_cast<float>(levels / static_cast<double>(inf_norm(in)));
}

MinMaxParameters minmax_parameters(const std::vector<float>& x) {
  const auto range = kernels::value_range(x.data(), x.size());
  return {range.lo, 255 / (static_cast<double>(range.hi) - range.lo)};
}

std::vector<std::int8_t> cpu_levels(const std::vector<float>& x, float scale, int levels, const CounterRng& rng) {
  std::vector<std::int8_t> q(x.size());
  kernels::linear_encode_i8(x.data(), q.data(), x.size(), scale, levels, rng.key_low(), rng.key_high(), kFirst);
  return q;
}

std::vector<std::uint8_t> cpu_packed(const std::vector<float>& x, float scale, const CounterRng& rng) {
  const auto q = cpu_levels(x, scale, kLevels4, rng);
  std::vector<std::uint8_t> packed((q.size() + 1) / 2);
  kernels::pack_i4(q.data(), packed.data(), q.size());
  return packed;
}

std::vector<std::uint8_t> cpu_exp_codes(const HostCaseInputs& in, const std::vector<float>& x, const CounterRng& rng) {
  const int c = exp_dither::headroom(kRanksForHeadroom, true);
  std::vector<std::uint8_t> codes(x.size());
  kernels::exp_encode(x.data(), codes.data(), x.size(), inf_norm(in), c, exp_dither::levels(c), rng.key_low(),
                      rng.key_high(), kFirst);
  return codes;
}

std::vector<std::int32_t> cpu_integers(const std::vector<float>& x, bool random, const CounterRng& rng) {
  std::vector<std::int32_t> q(x.size());
  kernels::int_round_i32(x.data(), q.data(), x.size(), kIntAlpha, 1 << 28, random, rng.key_low(), rng.key_high(),
                         kFirst);
  return q;
}

std::int64_t wide_clip() { return per_rank_clip(IntWire::int64, kRanksForHeadroom); }

std::vector<std::int64_t> cpu_wide_integers(const std::vector<float>& x, bool random, const CounterRng& rng) {
  std::vector<std::int64_t> q(x.size());
  round_scaled<float, std::int64_t>(x, kWideAlpha, random ? IntRounding::random : IntRounding::deterministic,
                                    wide_clip(), rng, kFirst, q.data());
  return q;
}

std::vector<std::int64_t> cpu_wide_sums(const HostCaseInputs& in) {
  auto sums = cpu_wide_integers(in.x, true, kRank0);
  const auto other = cpu_wide_integers(in.y, true, kRank1);
  for (std::size_t i = 0; i < sums.size(); ++i) sums[i] += other[i];
  return sums;
}

std::vector<std::byte> with_status(std::vector<std::byte> out, std::uint32_t flag) {
  const auto* p = reinterpret_cast<const std::byte*>(&flag);
  out.insert(out.end(), p, p + 4);
  return out;
}

// fp32 sums as the fp32 codec and IntSGD's exact step make them
// (fp32_mean.h): x + y divided by 2, then x·2^-2 + y·2^-2 decoded to the
// mean of 3 ranks' worth.
std::vector<std::byte> fp32_sums(const HostCaseInputs& in) {
  std::vector<float> plain(in.x.size()), scaled(in.x.size());
  for (std::size_t i = 0; i < plain.size(); ++i) plain[i] = in.x[i] + in.y[i];
  finish_fp32_mean(0.0, 2, plain);
  const SumScaling scaling = SumScaling::for_sum(FLT_MAX, kScaledFp32Ranks);
  for (std::size_t i = 0; i < scaled.size(); ++i) {
    scaled[i] = scaling.mean(scaling.encode(in.x[i]) + scaling.encode(in.y[i]));
  }
  auto bytes = bytes_of(plain);
  const auto more = bytes_of(scaled);
  bytes.insert(bytes.end(), more.begin(), more.end());
  return bytes;
}

ElementForm records_form(int rank, std::size_t per_range) {
  const CounterRng& rng = rank == 0 ? kRank0 : kRank1;
  ElementForm form;
  form.code = ElementForm::Code::minmax_gathered;
  form.levels = 255;
  form.values_per_range = per_range;
  form.lattice = rank == 1;
  form.lattice_offset = 0.5 - kRecordShift;
  form.shift = kRecordShift;
  form.key_low = rng.key_low();
  form.key_high = rng.key_high();
  form.ranks = 1;
  return form;
}

namespace {

// Both ranks' records, then their mean.
std::vector<std::byte> minmax_records(const HostCaseInputs& in, std::size_t per_range) {
  const ElementForm rank0 = records_form(0, per_range), rank1 = records_form(1, per_range);
  const std::size_t bytes = minmax_record_bytes(rank0, in.x.size());
  std::vector<std::byte> records(2 * bytes);
  encode_minmax_records(rank0, in.x, kFirst, std::span(records).first(bytes));
  encode_minmax_records(rank1, in.y, kFirst, std::span(records).subspan(bytes));
  ElementForm mean = rank0;
  mean.ranks = mean.divide_by = 2;
  std::vector<float> out(in.x.size());
  decode_minmax_records(mean, records, out);
  const auto values = bytes_of(out);
  records.insert(records.end(), values.begin(), values.end());
  return records;
}

}  // namespace

std::vector<std::byte> cpu_reference(DeviceCaseKind kind, const HostCaseInputs& in) {
  switch (kind) {
    case DeviceCaseKind::linear8_encode: return bytes_of(cpu_levels(in.x, scale_for(in, kLevels8), kLevels8, kRank0));
    case DeviceCaseKind::linear8_sum_decode: return linear8_sum_decode(in);
    case DeviceCaseKind::linear8_average: return linear8_average(in);
    case DeviceCaseKind::linear4_encode: return bytes_of(cpu_packed(in.x, scale_for(in, kLevels4), kRank0));
    case DeviceCaseKind::linear4_average_decode: return linear4_average_decode(in);
    case DeviceCaseKind::exp_encode: return bytes_of(cpu_exp_codes(in, in.x, kRank0));
    case DeviceCaseKind::exp_reduce_decode: return exp_reduce_decode(in);
    case DeviceCaseKind::minmax: return minmax(in);
    case DeviceCaseKind::minmax_records: return minmax_records(in, kRecordBucket);
    case DeviceCaseKind::minmax_one_range: return minmax_records(in, in.x.size());
    case DeviceCaseKind::intsgd_round: return intsgd_round(in);
    case DeviceCaseKind::intsgd_sum_decode: return intsgd_sum_decode(in);
    case DeviceCaseKind::intsgd_wide: return intsgd_wide(in);
    case DeviceCaseKind::fp16: return fp16(in);
    case DeviceCaseKind::fp32_sums: return fp32_sums(in);
    case DeviceCaseKind::norms: return norms(in);
  }
  return {};
}

}  // namespace qccl::tools
