// What qccl-device-check runs: every device kernel next to the CPU kernel it
// must match (a case: the same inputs, keys and counters on both, output
// bytes compared; the CPU side is device_case_reference.h), and each device
// codec's encode + decode, to time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "qccl/codecs/device/device_buffer.h"
#include "qccl/tools/device_case_reference.h"

namespace qccl::tools {

struct DeviceCaseInputs {
  DeviceCaseInputs(std::size_t count, cudaStream_t stream);

  std::size_t count;
  HostCaseInputs host;
  struct OnDevice {
    DeviceBuffer<float> x, y;
  } device;
};

struct DeviceCase {
  std::string name;
  DeviceCaseKind kind;  // its CPU side: cpu_reference(kind, inputs.host)
  // The device's output; it reads the host inputs only for the scalars a
  // codec gets from its exchange (the global norm, the value range).
  std::function<std::vector<std::byte>(const DeviceCaseInputs&, cudaStream_t)> device;
};
std::vector<DeviceCase> device_cases();

// prepare() allocates what the codec needs and returns a function that
// enqueues one encode and one decode of the whole input.
struct DeviceCodecTiming {
  std::string name;
  std::function<std::function<void()>(const DeviceCaseInputs&, cudaStream_t)> prepare;
};
std::vector<DeviceCodecTiming> device_codec_timings();

}  // namespace qccl::tools
