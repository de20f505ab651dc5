// The device side of qccl-device-check's cases (device_cases.h); the CPU
// side, with the parameters a 4-rank step would use, is
// device_case_reference.cc.
#include "qccl/tools/device_cases.h"

#include <cstring>
#include <memory>
#include <tuple>

#include "qccl/codecs/device/device_kernels.h"
#include "qccl/codecs/kernels/element_ops.h"
#include "qccl/codecs/quantizers/exp_dither.h"

namespace qccl::tools {
namespace {

namespace dk = device_kernels;

template <class T>
std::vector<std::byte> bytes_of(const DeviceBuffer<T>& buffer, cudaStream_t stream) {
  const auto values = buffer.to_host(stream);
  const auto* p = reinterpret_cast<const std::byte*>(values.data());
  return std::vector<std::byte>(p, p + values.size() * sizeof(T));
}

dk::DeviceStatus read_status(const DeviceBuffer<dk::DeviceStatus>& status, cudaStream_t stream) {
  return status.to_host(stream).front();
}
DeviceBuffer<dk::DeviceStatus> zero_status(cudaStream_t stream) {
  return DeviceBuffer<dk::DeviceStatus>(std::vector<dk::DeviceStatus>{dk::DeviceStatus{}}, stream);
}

const int kHeadroom = exp_dither::headroom(kRanksForHeadroom, true);

// IntSGD's integers of x by `round(q, random, status)`, randomly rounded
// and then to nearest, their bytes one after the other.
template <class Int, class Round>
std::vector<std::byte> rounded_both_ways(std::size_t count, cudaStream_t stream, Round round) {
  std::vector<std::byte> bytes;
  for (bool random : {true, false}) {
    DeviceBuffer<Int> q(count);
    auto status = zero_status(stream);
    round(q.data(), random, status.data());
    const auto out = bytes_of(q, stream);
    bytes.insert(bytes.end(), out.begin(), out.end());
  }
  return bytes;
}

std::vector<DeviceCase> linear_cases() {
  return {
      {"linear 8-bit encode", DeviceCaseKind::linear8_encode,
       [](const DeviceCaseInputs& in, cudaStream_t s) {
         DeviceBuffer<std::int8_t> q(in.count);
         dk::linear_encode_i8(in.device.x.data(), q.data(), in.count, scale_for(in.host, kLevels8), kLevels8,
                              kRank0.key_low(), kRank0.key_high(), kFirst, s);
         return bytes_of(q, s);
       }},
      {"linear 8-bit sum + decode", DeviceCaseKind::linear8_sum_decode,
       [](const DeviceCaseInputs& in, cudaStream_t s) {
         const float scale = scale_for(in.host, kLevels8);
         DeviceBuffer<std::int8_t> a(cpu_levels(in.host.x, scale, kLevels8, kRank0), s);
         const DeviceBuffer<std::int8_t> b(cpu_levels(in.host.y, scale, kLevels8, kRank1), s);
         auto status = zero_status(s);
         dk::add_i8_checked(a.data(), b.data(), in.count, 2 * kLevels8, status.data(), s);
         DeviceBuffer<float> out(in.count);
         dk::linear_decode_i8(a.data(), out.data(), in.count, inf_norm(in.host) / (2.0f * kLevels8), s);
         return with_status(bytes_of(out, s), read_status(status, s).out_of_range ? 1 : 0);
       }},
      {"linear 8-bit average", DeviceCaseKind::linear8_average,
       [](const DeviceCaseInputs& in, cudaStream_t s) {
         const float scale = scale_for(in.host, 127);
         const DeviceBuffer<std::int8_t> a(cpu_levels(in.host.x, scale, 127, kRank0), s);
         const DeviceBuffer<std::int8_t> b(cpu_levels(in.host.y, scale, 127, kRank1), s);
         DeviceBuffer<std::int8_t> out(in.count);
         dk::average_i8(a.data(), b.data(), out.data(), in.count, 3, 1, kHop.key_low(), kHop.key_high(), kFirst, s);
         return bytes_of(out, s);
       }},
      {"linear 4-bit encode", DeviceCaseKind::linear4_encode,
       [](const DeviceCaseInputs& in, cudaStream_t s) {
         DeviceBuffer<std::uint8_t> packed((in.count + 1) / 2);
         dk::linear_encode_i4(in.device.x.data(), packed.data(), in.count, scale_for(in.host, kLevels4), kLevels4,
                              kRank0.key_low(), kRank0.key_high(), kFirst, s);
         return bytes_of(packed, s);
       }},
      {"linear 4-bit average + decode", DeviceCaseKind::linear4_average_decode,
       [](const DeviceCaseInputs& in, cudaStream_t s) {
         const float scale = scale_for(in.host, kLevels4);
         DeviceBuffer<std::uint8_t> a(cpu_packed(in.host.x, scale, kRank0), s);
         const DeviceBuffer<std::uint8_t> b(cpu_packed(in.host.y, scale, kRank1), s);
         dk::average_i4(a.data(), b.data(), in.count, 1, 1, kHop.key_low(), kHop.key_high(), kFirst, s);
         DeviceBuffer<float> out(in.count);
         dk::linear_decode_i4(a.data(), out.data(), in.count, inf_norm(in.host) / kLevels4, s);
         return bytes_of(out, s);
       }},
  };
}

// Two ranks' min-max records in buckets of `per_range` (x on rank 0, y on
// rank 1), then their mean (device_case_reference.h: records_form).
std::vector<std::byte> records_and_mean(const DeviceCaseInputs& in, std::size_t per_range, cudaStream_t s) {
  const ElementForm rank0 = records_form(0, per_range), rank1 = records_form(1, per_range);
  const std::size_t bytes = element_ops::record_bytes(in.count, per_range);
  DeviceBuffer<std::uint8_t> records(2 * bytes);
  for (const auto& [form, x, at] : {std::tuple{rank0, in.device.x.data(), std::size_t{0}},
                                    std::tuple{rank1, in.device.y.data(), bytes}}) {
    dk::minmax_records_encode(x, records.data() + at, in.count, per_range, form.levels, form.lattice,
                              form.lattice_offset, form.key_low, form.key_high, kFirst, s);
  }
  DeviceBuffer<float> out(in.count);
  dk::minmax_records_mean(records.data(), out.data(), in.count, per_range, rank0.levels, rank0.shift, 2, 2, s);
  auto result = bytes_of(records, s);
  const auto values = bytes_of(out, s);
  result.insert(result.end(), values.begin(), values.end());
  return result;
}

std::vector<DeviceCase> exponential_and_minmax_cases() {
  return {
      {"exp 8-bit encode", DeviceCaseKind::exp_encode,
       [](const DeviceCaseInputs& in, cudaStream_t s) {
         DeviceBuffer<std::uint8_t> codes(in.count);
         dk::exp_encode(in.device.x.data(), codes.data(), in.count, inf_norm(in.host), kHeadroom,
                        exp_dither::levels(kHeadroom), kRank0.key_low(), kRank0.key_high(), kFirst, s);
         return bytes_of(codes, s);
       }},
      {"exp 8-bit reduce + decode", DeviceCaseKind::exp_reduce_decode,
       [](const DeviceCaseInputs& in, cudaStream_t s) {
         DeviceBuffer<std::uint8_t> a(cpu_exp_codes(in.host, in.host.x, kRank0), s);
         const DeviceBuffer<std::uint8_t> b(cpu_exp_codes(in.host, in.host.y, kRank1), s);
         auto status = zero_status(s);
         dk::exp_reduce(a.data(), b.data(), in.count, kHop.key_low(), kHop.key_high(), kFirst, status.data(), s);
         DeviceBuffer<float> out(in.count);
         dk::exp_decode(a.data(), out.data(), in.count, kHeadroom, inf_norm(in.host) / 2, s);
         return with_status(bytes_of(out, s), read_status(status, s).out_of_range ? 1 : 0);
       }},
      {"min-max encode + decode-add", DeviceCaseKind::minmax,
       [](const DeviceCaseInputs& in, cudaStream_t s) {
         const auto [lo, scale] = minmax_parameters(in.host.x);
         DeviceBuffer<std::uint8_t> q(in.count), lattice(in.count);
         dk::minmax_encode_u8(in.device.x.data(), q.data(), in.count, lo, scale, 255, kRank0.key_low(),
                              kRank0.key_high(), kFirst, s);
         dk::lattice_encode_u8(in.device.x.data(), lattice.data(), in.count, lo, scale, 0.5 - 0.1875, 255, s);
         DeviceBuffer<float> out(in.host.y, s);
         dk::affine_decode_add_u8(q.data(), out.data(), in.count, lo, 1 / scale, s);
         auto bytes = bytes_of(out, s);
         for (const auto& b : {bytes_of(q, s), bytes_of(lattice, s)}) bytes.insert(bytes.end(), b.begin(), b.end());
         return bytes;
       }},
      {"min-max bucket records + mean", DeviceCaseKind::minmax_records,
       [](const DeviceCaseInputs& in, cudaStream_t s) { return records_and_mean(in, kRecordBucket, s); }},
      {"min-max one range per vector + mean", DeviceCaseKind::minmax_one_range,
       [](const DeviceCaseInputs& in, cudaStream_t s) { return records_and_mean(in, in.count, s); }},
  };
}

std::vector<DeviceCase> integer_and_float_cases() {
  return {
      {"intsgd round (random, det.)", DeviceCaseKind::intsgd_round,
       [](const DeviceCaseInputs& in, cudaStream_t s) {
         return rounded_both_ways<std::int32_t>(in.count, s, [&](std::int32_t* q, bool random, dk::DeviceStatus* st) {
           dk::int_round_i32(in.device.x.data(), q, in.count, kIntAlpha, 1 << 28, random, kRank0.key_low(),
                             kRank0.key_high(), kFirst, st, s);
         });
       }},
      {"intsgd sum + decode", DeviceCaseKind::intsgd_sum_decode,
       [](const DeviceCaseInputs& in, cudaStream_t s) {
         DeviceBuffer<std::int32_t> a(cpu_integers(in.host.x, true, kRank0), s);
         const DeviceBuffer<std::int32_t> b(cpu_integers(in.host.y, true, kRank1), s);
         auto sum_status = zero_status(s), decode_status = zero_status(s);
         dk::add_i32_checked(a.data(), b.data(), in.count, 1 << 29, sum_status.data(), s);
         DeviceBuffer<float> out(in.count);
         dk::int_decode_i32(a.data(), out.data(), in.count, 1 / (2 * kIntAlpha), decode_status.data(), s);
         return with_status(with_status(bytes_of(out, s), read_status(sum_status, s).out_of_range ? 1 : 0),
                            read_status(decode_status, s).largest);
       }},
      {"intsgd int64 round + decode", DeviceCaseKind::intsgd_wide,
       [](const DeviceCaseInputs& in, cudaStream_t s) {
         auto bytes = rounded_both_ways<std::int64_t>(in.count, s, [&](std::int64_t* q, bool random, dk::DeviceStatus* st) {
           dk::int_round_i64(in.device.x.data(), q, in.count, kWideAlpha, wide_clip(), random, kRank0.key_low(),
                             kRank0.key_high(), kFirst, st, s);
         });
         const DeviceBuffer<std::int64_t> summed(cpu_wide_sums(in.host), s);
         DeviceBuffer<float> out(in.count);
         dk::int_decode_i64(summed.data(), out.data(), in.count, 1 / (2 * kWideAlpha), s);
         const auto values = bytes_of(out, s);
         bytes.insert(bytes.end(), values.begin(), values.end());
         return bytes;
       }},
      {"fp16 encode + add + decode", DeviceCaseKind::fp16,
       [](const DeviceCaseInputs& in, cudaStream_t s) {
         DeviceBuffer<std::uint16_t> a(in.count), b(in.count);
         dk::fp16_encode(in.device.x.data(), a.data(), in.count, 0.5f, s);
         dk::fp16_encode(in.device.y.data(), b.data(), in.count, 0.5f, s);
         dk::fp16_add(a.data(), b.data(), in.count, s);
         DeviceBuffer<float> out(in.count);
         dk::fp16_decode(a.data(), out.data(), in.count, s);
         return bytes_of(out, s);
       }},
      {"fp32 sums (plain, scaled)", DeviceCaseKind::fp32_sums,
       [](const DeviceCaseInputs& in, cudaStream_t s) {
         DeviceBuffer<float> a(in.count), b(in.count), out(in.count);
         dk::fp32_scale(in.device.x.data(), a.data(), in.count, 1.0f, s);
         dk::fp32_add(a.data(), in.device.y.data(), in.count, s);
         dk::fp32_mean(a.data(), out.data(), in.count, 2.0f, 0.0, s);
         auto bytes = bytes_of(out, s);
         dk::fp32_scale(in.device.x.data(), a.data(), in.count, 0.25f, s);
         dk::fp32_scale(in.device.y.data(), b.data(), in.count, 0.25f, s);
         dk::fp32_add(a.data(), b.data(), in.count, s);
         dk::fp32_mean(a.data(), out.data(), in.count, static_cast<float>(kScaledFp32Ranks),
                       4.0 / kScaledFp32Ranks, s);
         const auto scaled = bytes_of(out, s);
         bytes.insert(bytes.end(), scaled.begin(), scaled.end());
         return bytes;
       }},
      {"norms (max |x|, sum x^2)", DeviceCaseKind::norms,
       [](const DeviceCaseInputs& in, cudaStream_t s) {
         auto status = zero_status(s);
         dk::max_abs_bits(in.device.x.data(), in.count, status.data(), s);
         const double squares = dk::sum_of_squares(in.device.x.data(), in.count, s);
         std::vector<std::byte> bytes(sizeof squares);
         std::memcpy(bytes.data(), &squares, sizeof squares);
         return with_status(bytes, read_status(status, s).largest);
       }},
  };
}

// One encode and one decode of the whole input, on buffers made once.
template <class Code, class Encode, class Decode>
std::function<void()> round_trip(const DeviceCaseInputs& in, std::size_t codes, Encode encode, Decode decode) {
  auto q = std::make_shared<DeviceBuffer<Code>>(codes);
  auto out = std::make_shared<DeviceBuffer<float>>(in.count);
  const float* x = in.device.x.data();
  return [=] {
    encode(x, q->data());
    decode(q->data(), out->data());
  };
}

}  // namespace

DeviceCaseInputs::DeviceCaseInputs(std::size_t n, cudaStream_t stream)
    : count(n), host(case_inputs(n)),
      device{DeviceBuffer<float>(host.x, stream), DeviceBuffer<float>(host.y, stream)} {}

std::vector<DeviceCase> device_cases() {
  std::vector<DeviceCase> all = linear_cases();
  for (auto part : {exponential_and_minmax_cases(), integer_and_float_cases()}) {
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

std::vector<DeviceCodecTiming> device_codec_timings() {
  return {
      {"global-qsgd linear 8-bit",
       [](const DeviceCaseInputs& in, cudaStream_t s) {
         const float scale = scale_for(in.host, 127), step = 1 / scale;
         return round_trip<std::int8_t>(
             in, in.count,
             [=, n = in.count](const float* x, std::int8_t* q) {
               dk::linear_encode_i8(x, q, n, scale, 127, kRank0.key_low(), kRank0.key_high(), 0, s);
             },
             [=, n = in.count](const std::int8_t* q, float* out) { dk::linear_decode_i8(q, out, n, step, s); });
       }},
      {"global-qsgd linear 4-bit",
       [](const DeviceCaseInputs& in, cudaStream_t s) {
         const float scale = scale_for(in.host, kLevels4), step = 1 / scale;
         return round_trip<std::uint8_t>(
             in, (in.count + 1) / 2,
             [=, n = in.count](const float* x, std::uint8_t* q) {
               dk::linear_encode_i4(x, q, n, scale, kLevels4, kRank0.key_low(), kRank0.key_high(), 0, s);
             },
             [=, n = in.count](const std::uint8_t* q, float* out) { dk::linear_decode_i4(q, out, n, step, s); });
       }},
      {"global-qsgd exp 8-bit",
       [](const DeviceCaseInputs& in, cudaStream_t s) {
         const int c = kHeadroom;
         const float norm = inf_norm(in.host);
         return round_trip<std::uint8_t>(
             in, in.count,
             [=, n = in.count](const float* x, std::uint8_t* q) {
               dk::exp_encode(x, q, n, norm, c, exp_dither::levels(c), kRank0.key_low(), kRank0.key_high(), 0, s);
             },
             [=, n = in.count](const std::uint8_t* q, float* out) { dk::exp_decode(q, out, n, c, norm, s); });
       }},
      {"min-max 8-bit (buckets 1024)",  // the device step's kernels: ranges + codes, then one rank's values
       [](const DeviceCaseInputs& in, cudaStream_t s) {
         const ElementForm form = records_form(0);
         return round_trip<std::uint8_t>(
             in, element_ops::record_bytes(in.count, 1024),
             [=, n = in.count](const float* x, std::uint8_t* records) {
               dk::minmax_records_encode(x, records, n, 1024, form.levels, false, 0, form.key_low, form.key_high, 0, s);
             },
             [=, n = in.count](const std::uint8_t* records, float* out) {
               dk::minmax_records_mean(records, out, n, 1024, form.levels, 0, 1, 1, s);
             });
       }},
      {"intsgd int8 (random)",
       [](const DeviceCaseInputs& in, cudaStream_t s) {
         auto status = std::make_shared<DeviceBuffer<dk::DeviceStatus>>(zero_status(s));
         const float alpha = 127 / inf_norm(in.host);
         return round_trip<std::int8_t>(
             in, in.count,
             [=, n = in.count](const float* x, std::int8_t* q) {
               dk::int_round_i8(x, q, n, alpha, 127, true, kRank0.key_low(), kRank0.key_high(), 0, status->data(), s);
             },
             [=, n = in.count](const std::int8_t* q, float* out) {
               dk::int_decode_i8(q, out, n, 1 / alpha, status->data(), s);
             });
       }},
      {"fp16",
       [](const DeviceCaseInputs& in, cudaStream_t s) {
         return round_trip<std::uint16_t>(
             in, in.count, [=, n = in.count](const float* x, std::uint16_t* h) { dk::fp16_encode(x, h, n, 1.0f, s); },
             [=, n = in.count](const std::uint16_t* h, float* out) { dk::fp16_decode(h, out, n, s); });
       }},
  };
}

}  // namespace qccl::tools
