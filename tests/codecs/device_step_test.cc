// A codec step on device data (Codec::allreduce_mean on a DeviceVector),
// run on the host implementation (HostMemoryVector), against the same
// step on host data: the same bits on every rank, for every codec that
// runs on devices, ranks {1, 2, 3, 4, 7}, both algorithms and awkward
// lengths. A GPU's vector must equal the host one (qccl-device-check), so
// this is the device step's data path checked without a GPU. IntSGD's
// adaptive codec takes its exact first step, then (fed an optimizer
// update, device_step_codecs.h) an integer step with one scale per tensor
// of three. Min-max (QSDP's buckets) gathers every rank's encoding and
// decodes them where the data is. Also: ranks mixing device and host data
// in one collective; the step, the reduce-scatter and the allgather over a
// process group's collectives; the reduce-scatter and the allgather on
// device data; and the refusals.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <functional>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "../support/collective_checks.h"
#include "../support/device_step_codecs.h"
#include "../support/group_transport.h"
#include "../support/refusal.h"
#include "../support/patterns.h"
#include "../support/world.h"
#include "qccl/codecs/codec.h"
#include "qccl/codecs/element_form_reference.h"
#include "qccl/codecs/host_memory_vector.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

struct DeviceStepCase {
  std::string spec;
  int ranks;
  Algorithm algorithm;
  std::size_t length;
};

std::vector<DeviceStepCase> all_cases() {
  std::vector<DeviceStepCase> cases;
  for (const std::string& spec : test::device_step_specs()) {
    for (int ranks : {1, 2, 3, 4, 7}) {
      for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling}) {
        for (std::size_t length : {std::size_t{1}, std::size_t{1001}, std::size_t{70001}}) {
          cases.push_back({spec, ranks, algorithm, length});
        }
      }
    }
  }
  return cases;
}

std::string name_of(const testing::TestParamInfo<DeviceStepCase>& info) {
  const auto& c = info.param;
  std::string name = c.spec + "_" + std::to_string(c.ranks) + "ranks_" +
                     (c.algorithm == Algorithm::ring ? "ring_" : "hd_") + std::to_string(c.length);
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

std::vector<float> input_of(int rank, std::size_t length) {
  return test::make_vector(length, [rank](std::size_t i) {
    return test::noise(rank, i) * std::ldexp(1.0f, static_cast<int>(i % 11) - 5);
  });
}

class DeviceStepTest : public testing::TestWithParam<DeviceStepCase> {};

// Two steps (the generator's step counter advances) on device data and on
// host data, by twin codecs of the same seed and bucket.
TEST_P(DeviceStepTest, EqualsTheHostStepBitForBit) {
  const DeviceStepCase& c = GetParam();
  const CollectiveOptions options{.algorithm = c.algorithm};
  test::run_world(c.ranks, [&](Communicator& comm) {
    auto on_device = make_codec(c.spec, CodecSettings{.seed = 5, .bucket = 2});
    auto on_host = make_codec(c.spec, CodecSettings{.seed = 5, .bucket = 2});
    auto device_values = input_of(comm.rank(), c.length);
    auto host_values = device_values;
    HostMemoryVector vector(device_values);
    for (int step = 0; step < 2; ++step) {
      if (step == 1) {
        test::feed(*on_device, c.length);
        test::feed(*on_host, c.length);
      }
      on_device->allreduce_mean(comm, vector, options);
      on_host->allreduce_mean(comm, std::span<float>(host_values), options);
      if (c.spec.starts_with("intsgd")) {  // the exact first step, then integers (or always: heuristic)
        EXPECT_EQ(on_host->last_step_stats().integer, step == 1 || !test::adapts_to_the_optimizer(c.spec))
            << step;
        EXPECT_FALSE(on_device->last_step_stats().integer) << "a device step counts no clipping";
      }
      for (std::size_t i = 0; i < c.length; ++i) {
        ASSERT_TRUE(test::same_bits(device_values[i], host_values[i]))
            << "step " << step << " rank " << comm.rank() << " element " << i << ": "
            << device_values[i] << " vs " << host_values[i];
      }
      test::expect_identical_across_ranks(comm, device_values);
    }
    EXPECT_EQ(on_device->step(), 2u);
  });
}

INSTANTIATE_TEST_SUITE_P(Codecs, DeviceStepTest, testing::ValuesIn(all_cases()), name_of);

// Even ranks on device data, odd ranks on host data, in one collective:
// the wire carries the same bytes either way (fp32: the host ranks sum on
// their buffers, the device ranks through staged codes). Two steps: fed
// intsgd's second is an integer one.
TEST(DeviceStepMixedTest, DeviceAndHostRanksShareOneCollective) {
  for (const std::string& spec : test::device_step_specs()) {
    std::vector<std::vector<float>> mixed(4), reference(4);
    for (bool all_host : {false, true}) {
      test::run_world(4, [&](Communicator& comm) {
        auto codec = make_codec(spec, CodecSettings{.seed = 9});
        auto values = input_of(comm.rank(), 4099);
        for (int step = 0; step < 2; ++step) {
          if (step == 1) test::feed(*codec, values.size());
          if (!all_host && comm.rank() % 2 == 0) {
            HostMemoryVector vector(values);
            codec->allreduce_mean(comm, vector);
          } else {
            codec->allreduce_mean(comm, std::span<float>(values));
          }
        }
        (all_host ? reference : mixed)[static_cast<std::size_t>(comm.rank())] = values;
      });
    }
    for (int r = 0; r < 4; ++r) {
      ASSERT_EQ(test::bytes_hash(mixed[r]), test::bytes_hash(reference[r])) << spec << " rank " << r;
    }
  }
}

// In-process ranks whose transport is also a process group's (group_data_path.h).
void run_group_world(int ranks, const std::function<void(Communicator&, test::GroupLikeTransport&)>& body) {
  run_in_process(ranks, [&](Transport& transport) {
    test::GroupLikeTransport group(transport);
    Communicator comm(group, {test::kTestTimeout, true});
    body(comm, group);
  });
}

// A device's vector fills its codes piece by piece and decodes chunk by
// chunk (CudaVector). This host vector stands for one: its codes read as
// garbage until codes_ready asks for their range, and it records the
// ranges it decodes. The step must wait for every code it sends, decode
// every element, and finish decoding before it returns.
class DeferredCodesVector final : public DeviceVector {
 public:
  explicit DeferredCodesVector(std::span<float> values) : inner_(values) {}

  std::size_t size() const override { return inner_.size(); }
  double norm_statistic(NormKind kind) override { return inner_.norm_statistic(kind); }
  std::span<const std::byte> encode(const ElementForm& form) override {
    const auto real = inner_.encode(form);
    real_.assign(real.begin(), real.end());
    shown_.assign(real.size(), std::byte{0xA5});
    form_ = form;
    return shown_;
  }
  // A gathered form's codes are revealed from the start of `first`'s bucket
  // (a device copies whole buckets' records: with one range per vector, the
  // range and every index before the chunk's).
  void codes_ready(std::size_t first, std::size_t count) override {
    const std::size_t start = form_is_gathered(form_) ? first - first % form_.values_per_range : first;
    const std::size_t offset = form_payload_offset(form_, start);
    const std::size_t bytes = form_payload_bytes(form_, first + count - start);
    std::copy_n(real_.begin() + static_cast<std::ptrdiff_t>(offset), bytes,
                shown_.begin() + static_cast<std::ptrdiff_t>(offset));
  }
  std::span<std::byte> result_codes(std::size_t bytes) override {
    decoded_.clear();  // a new step's result
    finished_ = false;
    return inner_.result_codes(bytes);
  }
  void decode_range(const ElementForm& form, std::size_t first, std::size_t count) override {
    EXPECT_FALSE(finished_) << "decoding started after finish_decoding";
    decoded_.emplace_back(first, count);
    inner_.decode_range(form, first, count);
  }
  void finish_decoding() override { finished_ = true; }
  void fill_zero() override { inner_.fill_zero(); }

  bool finished() const { return finished_; }
  // Whether the decoded ranges cover [0, size()) (each element at least once).
  bool decoded_everything() const {
    auto ranges = decoded_;
    std::sort(ranges.begin(), ranges.end());
    std::size_t covered = 0;
    for (const auto& [first, count] : ranges) {
      if (first > covered) return false;
      covered = std::max(covered, first + count);
    }
    return covered == size();
  }

 private:
  HostMemoryVector inner_;
  ElementForm form_;
  std::vector<std::byte> real_, shown_;
  std::vector<std::pair<std::size_t, std::size_t>> decoded_;
  bool finished_ = false;
};

TEST(DeviceStepPipelineTest, WaitsForCodesAndDecodesEveryChunk) {
  for (const std::string& spec : test::device_step_specs()) {
    for (int ranks : {1, 2, 3, 4, 7}) {
      for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling}) {
        for (std::size_t length : {std::size_t{1}, std::size_t{1001}, std::size_t{70001}}) {
          test::run_world(ranks, [&](Communicator& comm) {
            auto on_device = make_codec(spec, CodecSettings{.seed = 4});
            auto on_host = make_codec(spec, CodecSettings{.seed = 4});
            test::feed(*on_device, length);  // intsgd: an integer step
            test::feed(*on_host, length);
            auto device_values = input_of(comm.rank(), length);
            auto host_values = device_values;
            DeferredCodesVector vector(device_values);
            on_device->allreduce_mean(comm, vector, {.algorithm = algorithm});
            on_host->allreduce_mean(comm, std::span<float>(host_values), {.algorithm = algorithm});
            ASSERT_EQ(test::bytes_hash(device_values), test::bytes_hash(host_values))
                << spec << " ranks " << ranks << " length " << length;
            EXPECT_TRUE(vector.decoded_everything()) << spec << " ranks " << ranks;
            EXPECT_TRUE(vector.finished()) << spec;
          });
        }
      }
    }
  }
}

// Two reduce-scatter steps of `spec` on device data and on host data (an
// adaptive intsgd's second one an integer step): rank r's block bit for
// bit the same, the input unchanged, every element of the block decoded.
void expect_reduce_scatter_like_host(Communicator& comm, const std::string& spec, std::size_t length,
                                     const CollectiveOptions& options) {
  auto on_device = make_codec(spec, CodecSettings{.seed = 6, .bucket = 1});
  auto on_host = make_codec(spec, CodecSettings{.seed = 6, .bucket = 1});
  const auto input = input_of(comm.rank(), length);
  const Range mine = on_host->reduce_scatter_blocks(length, comm.size())[comm.rank()];
  std::vector<float> device_input = input, device_block(mine.count), host_block(mine.count);
  DeferredCodesVector in(device_input);
  DeferredCodesVector out(device_block);
  for (int step = 0; step < 2; ++step) {
    if (step == 1) {
      test::feed(*on_device, length);
      test::feed(*on_host, length);
    }
    on_device->reduce_scatter_mean(comm, in, out, options);
    on_host->reduce_scatter_mean(comm, input, host_block, options);
    ASSERT_EQ(test::bytes_hash(device_block), test::bytes_hash(host_block))
        << spec << " ranks " << comm.size() << " length " << length << " step " << step;
    EXPECT_EQ(device_input, input) << "the input changed";
    EXPECT_TRUE(out.finished() && (mine.count == 0 || out.decoded_everything())) << spec;
  }
  EXPECT_EQ(on_device->step(), 2u);
}

// Two allgather steps of `spec` on device data and on host data: every
// rank's output bit for bit the same, identical across ranks, the shard
// unchanged, every element decoded.
void expect_allgather_like_host(Communicator& comm, const std::string& spec, std::size_t shard,
                                const CollectiveOptions& options) {
  auto on_device = make_codec(spec, CodecSettings{.seed = 8, .bucket = 3});
  auto on_host = make_codec(spec, CodecSettings{.seed = 8, .bucket = 3});
  const std::size_t total = shard * static_cast<std::size_t>(comm.size());
  const auto input = input_of(comm.rank(), shard);
  std::vector<float> device_shard = input, device_output(total), host_output(total);
  DeferredCodesVector in(device_shard);
  DeferredCodesVector out(device_output);
  for (int step = 0; step < 2; ++step) {
    on_device->allgather(comm, in, out, options);
    on_host->allgather(comm, input, host_output, options);
    ASSERT_EQ(test::bytes_hash(device_output), test::bytes_hash(host_output))
        << spec << " ranks " << comm.size() << " shard " << shard << " step " << step;
    test::expect_identical_across_ranks(comm, device_output);
    EXPECT_EQ(device_shard, input) << "the shard changed";
    EXPECT_TRUE(out.finished() && out.decoded_everything()) << spec;
  }
  EXPECT_EQ(on_device->step(), 2u);
}

// The reduce-scatter mean on device data: rank r's block of the mean in
// its output vector, bit for bit the host reduce-scatter's, two steps,
// every codec with a device step, ranks {1, 2, 3, 4, 7}, both algorithms
// (intsgd: the exact step, then an integer one whose blocks of scales are
// looked up by the step's index in each rank's output block).
TEST(DeviceReduceScatterTest, EqualsTheHostReduceScatterBitForBit) {
  for (const std::string& spec : test::device_step_specs()) {
    for (int ranks : {1, 2, 3, 4, 7}) {
      for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling}) {
        for (std::size_t length : {std::size_t{1}, std::size_t{1001}, std::size_t{70001}}) {
          test::run_world(ranks, [&](Communicator& comm) {
            expect_reduce_scatter_like_host(comm, spec, length, {.algorithm = algorithm});
          });
        }
      }
    }
  }
}

// Shards of about 1, 333 and 23335 elements, each a whole number of the
// codec's units (packed 4-bit pairs, min-max's buckets: an allgather on
// device data needs them), at least one unit: odd lengths where the unit
// is one element.
std::vector<std::size_t> shards_of_whole_units(const std::string& spec) {
  const std::size_t unit = make_codec(spec)->traits().granularity;
  std::vector<std::size_t> shards;
  for (std::size_t about : {std::size_t{1}, std::size_t{333}, std::size_t{23335}}) {
    shards.push_back(std::max(unit, about / unit * unit));
  }
  return shards;
}

// The allgather of shards on device data: every rank's output, bit for bit
// the host allgather's, two steps, every codec with a device step that
// gathers, ranks {1, 2, 3, 4, 7}, both algorithms, shards of awkward (odd)
// lengths, so that a rank's shard starts at an odd element and its
// generator counters start there.
TEST(DeviceAllgatherTest, EqualsTheHostAllgatherBitForBit) {
  for (const std::string& spec : test::device_step_specs()) {
    if (!make_codec(spec)->traits().operations.allgather) continue;
    for (int ranks : {1, 2, 3, 4, 7}) {
      for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling}) {
        for (std::size_t shard : shards_of_whole_units(spec)) {
          test::run_world(ranks, [&](Communicator& comm) {
            expect_allgather_like_host(comm, spec, shard, {.algorithm = algorithm});
          });
        }
      }
    }
  }
}

// One range per vector (min-max's bucket=0) in chunks of 1000 bytes: the
// collective cuts every rank's vector (its one bucket) into dozens of
// chunks, each sent with the vector's range; the device step's chunks and
// result are the host step's bit for bit, for the allreduce, the
// reduce-scatter and the allgather, ranks {2, 3, 7}, both algorithms.
TEST(DeviceStepOneRangeTest, ChunksCutInsideTheRangeEqualTheHostStep) {
  const CollectiveOptions base{.chunk_bytes = 1000};
  for (const std::string& spec : test::device_one_range_specs()) {
    for (int ranks : {2, 3, 7}) {
      for (Algorithm algorithm : {Algorithm::ring, Algorithm::halving_doubling}) {
        CollectiveOptions options = base;
        options.algorithm = algorithm;
        test::run_world(ranks, [&](Communicator& comm) {
          auto on_device = make_codec(spec, CodecSettings{.seed = 12});
          auto on_host = make_codec(spec, CodecSettings{.seed = 12});
          const std::size_t length = 30011;
          const auto input = input_of(comm.rank(), length);
          auto device_values = input, host_values = input;
          DeferredCodesVector vector(device_values);
          on_device->allreduce_mean(comm, vector, options);
          on_host->allreduce_mean(comm, std::span<float>(host_values), options);
          ASSERT_EQ(test::bytes_hash(device_values), test::bytes_hash(host_values)) << spec << " allreduce";
          EXPECT_TRUE(vector.finished() && vector.decoded_everything()) << spec;
          const Range mine = on_host->reduce_scatter_blocks(length, ranks)[comm.rank()];
          std::vector<float> device_input = input, device_block(mine.count), host_block(mine.count);
          DeferredCodesVector in(device_input), out(device_block);
          on_device->reduce_scatter_mean(comm, in, out, options);
          on_host->reduce_scatter_mean(comm, input, host_block, options);
          ASSERT_EQ(test::bytes_hash(device_block), test::bytes_hash(host_block)) << spec << " reduce-scatter";
          std::vector<float> shard = input_of(comm.rank() + 1, 9001);
          std::vector<float> device_all(9001 * static_cast<std::size_t>(ranks)), host_all(device_all.size());
          DeferredCodesVector shard_in(shard), all(device_all);
          on_device->allgather(comm, shard_in, all, options);
          on_host->allgather(comm, shard, host_all, options);
          ASSERT_EQ(test::bytes_hash(device_all), test::bytes_hash(host_all)) << spec << " allgather";
          test::expect_identical_across_ranks(comm, device_all);
        });
      }
    }
  }
}

TEST(DeviceAllgatherTest, WrongSizesAndCodecsWithoutAllgatherAreRefused) {
  test::run_world(3, [](Communicator& comm) {
    std::vector<float> shard = input_of(comm.rank(), 10), output(29);
    HostMemoryVector in(shard), out(output);
    EXPECT_THROW(make_codec("global-qsgd:bits=8")->allgather(comm, in, out), InvalidArgument);
    std::vector<float> whole(30);
    HostMemoryVector all(whole);
    EXPECT_THROW(make_codec("intsgd-heuristic")->allgather(comm, in, all), InvalidArgument);
    // Packed 4-bit codes of odd shards would share a byte at each shard's end.
    std::vector<float> odd = input_of(comm.rank(), 333), gathered(999);
    HostMemoryVector odd_in(odd), odd_out(gathered);
    EXPECT_THAT(test::refusal([&] { make_codec("global-qsgd:bits=4")->allgather(comm, odd_in, odd_out); }),
                ::testing::HasSubstr("multiple of 2"));
  });
}

TEST(DeviceReduceScatterTest, WrongOutputSizesAreRefused) {
  test::run_world(3, [](Communicator& comm) {
    auto codec = make_codec("global-qsgd:bits=8");
    std::vector<float> input = input_of(comm.rank(), 30), block(3);
    HostMemoryVector in(input), out(block);
    EXPECT_THROW(codec->reduce_scatter_mean(comm, in, out), InvalidArgument);
  });
}

// The reduce-scatter and the allgather of device data over a process
// group: the device step drives the host's group bodies with its staged
// codes, so every rank's result is bit for bit the host step's over the
// same group, two steps, ranks {1, 2, 3, 4, 7}, awkward lengths. Summed
// codes take one integer SUM per integer step (the whole vector's, as the
// allreduce), gathered ones none.
TEST(DeviceGroupOperationsTest, ReduceScatterEqualsTheHostStepOverTheGroup) {
  for (const std::string& spec : test::device_group_specs()) {
    for (int ranks : {1, 2, 3, 4, 7}) {
      for (std::size_t length : {std::size_t{1}, std::size_t{1001}, std::size_t{70001}}) {
        run_group_world(ranks, [&](Communicator& comm, test::GroupLikeTransport& group) {
          expect_reduce_scatter_like_host(comm, spec, length, {});
          const int integer_steps = spec.starts_with("global-qsgd") || spec.starts_with("intsgd-heuristic")
                                        ? 2
                                        : test::adapts_to_the_optimizer(spec) ? 1 : 0;
          EXPECT_EQ(group.sums(), 2 * integer_steps) << spec;
        });
      }
    }
  }
}

TEST(DeviceGroupOperationsTest, AllgatherEqualsTheHostStepOverTheGroup) {
  for (const std::string& spec : test::device_step_specs()) {
    if (!make_codec(spec)->traits().operations.allgather) continue;
    for (int ranks : {1, 2, 3, 4, 7}) {
      for (std::size_t shard : shards_of_whole_units(spec)) {
        run_group_world(ranks, [&](Communicator& comm, test::GroupLikeTransport& group) {
          expect_allgather_like_host(comm, spec, shard, {});
          EXPECT_EQ(group.sums(), 0) << spec << ": an allgather sums nothing";
          EXPECT_EQ(group.allgathers(), 4) << spec << ": one gather a step and side";
          // The steps' checks: under 1 KiB a rank per call (7 ranks: 1.9 KiB).
          EXPECT_LT(group.p2p_bytes(), std::size_t{4096} * static_cast<std::size_t>(ranks))
              << spec << ": the data went point to point";
        });
      }
    }
  }
}

// Host and device ranks share one reduce-scatter and one allgather over a
// group (their messages are the same bytes): ranks 0 and 2 of 4 on host
// data, every result the all-host one's.
TEST(DeviceGroupOperationsTest, HostAndDeviceRanksShareOneGroupStep) {
  for (const char* spec : {"global-qsgd:bits=8", "fp16", "fp32", "minmax:bits=3,bucket=37,rounding=dither",
                           "minmax:bits=4,bucket=0,rounding=shift"}) {
    std::vector<std::vector<float>> blocks[2], gathered[2];
    for (bool all_host : {true, false}) {
      for (auto* results : {&blocks[all_host], &gathered[all_host]}) results->resize(4);
      run_group_world(4, [&](Communicator& comm, test::GroupLikeTransport&) {
        const auto me = static_cast<std::size_t>(comm.rank());
        const bool on_host = all_host || comm.rank() % 2 == 0;
        auto codec = make_codec(spec, CodecSettings{.seed = 2});
        auto input = input_of(comm.rank(), 4070);
        std::vector<float> block(codec->reduce_scatter_blocks(4070, 4)[me].count);
        std::vector<float> shard = input_of(comm.rank() + 10, 1110), output(4440);
        if (on_host) {
          codec->reduce_scatter_mean(comm, input, block);
          codec->allgather(comm, shard, output);
        } else {
          HostMemoryVector in(input), out(block), shard_in(shard), all(output);
          codec->reduce_scatter_mean(comm, in, out);
          codec->allgather(comm, shard_in, all);
        }
        blocks[all_host][me] = block;
        gathered[all_host][me] = output;
      });
    }
    for (std::size_t r = 0; r < 4; ++r) {
      ASSERT_EQ(test::bytes_hash(blocks[false][r]), test::bytes_hash(blocks[true][r])) << spec << " rank " << r;
      ASSERT_EQ(test::bytes_hash(gathered[false][r]), test::bytes_hash(gathered[true][r])) << spec << " rank " << r;
    }
  }
}

// Over a process group (the PyTorch hook's process-group mode): the device
// step moves its codes by the group's integer or fp16 SUM allreduce, and
// equals the host step over the same group bit for bit, two steps, ranks
// {1, 2, 3, 4, 7}. Global-QSGD's summed levels are exact integers, so it
// also equals the ring on qccl's own transport.

TEST(DeviceStepGroupTest, EqualsTheHostStepOverTheGroup) {
  for (const std::string& spec : test::device_group_specs()) {
    for (int ranks : {1, 2, 3, 4, 7}) {
      for (std::size_t length : {std::size_t{1}, std::size_t{1001}, std::size_t{70001}}) {
        run_group_world(ranks, [&](Communicator& comm, test::GroupLikeTransport& group) {
          auto on_device = make_codec(spec, CodecSettings{.seed = 5, .bucket = 2});
          auto on_host = make_codec(spec, CodecSettings{.seed = 5, .bucket = 2});
          auto device_values = input_of(comm.rank(), length);
          auto host_values = device_values;
          DeferredCodesVector vector(device_values);
          for (int step = 0; step < 2; ++step) {
            if (step == 1) {
              test::feed(*on_device, length);
              test::feed(*on_host, length);
            }
            on_device->allreduce_mean(comm, vector);
            on_host->allreduce_mean(comm, std::span<float>(host_values));
            ASSERT_EQ(test::bytes_hash(device_values), test::bytes_hash(host_values))
                << spec << " ranks " << ranks << " length " << length << " step " << step;
            test::expect_identical_across_ranks(comm, device_values);
            EXPECT_TRUE(vector.finished() && vector.decoded_everything()) << spec;
          }
          // One integer sum per integer step and side: intsgd's first step is exact (fp32).
          const int integer_steps = spec.starts_with("global-qsgd") || spec.starts_with("intsgd-heuristic")
                                        ? 2
                                        : test::adapts_to_the_optimizer(spec) ? 1 : 0;
          EXPECT_EQ(group.sums(), 2 * integer_steps) << spec;
        });
      }
    }
  }
}

TEST(DeviceStepGroupTest, SummedLevelsEqualTheRingOnQcclsTransport) {
  for (int ranks : {2, 3, 7}) {
    std::vector<std::vector<float>> over_group(ranks), over_ring(ranks);
    for (bool group : {true, false}) {
      auto body = [&](Communicator& comm) {
        auto codec = make_codec("global-qsgd:bits=8", CodecSettings{.seed = 3});
        auto values = input_of(comm.rank(), 5003);
        HostMemoryVector vector(values);
        codec->allreduce_mean(comm, vector);
        (group ? over_group : over_ring)[static_cast<std::size_t>(comm.rank())] = values;
      };
      if (group) {
        run_group_world(ranks, [&](Communicator& comm, test::GroupLikeTransport&) { body(comm); });
      } else {
        test::run_world(ranks, body);
      }
    }
    for (int r = 0; r < ranks; ++r) {
      ASSERT_EQ(test::bytes_hash(over_group[r]), test::bytes_hash(over_ring[r])) << ranks << " ranks";
    }
  }
}

// Encodings combined hop by hop need qccl's own ring: an allreduce or a
// reduce-scatter of them is refused on every rank over a group, naming
// the MPI mode, before anything moves.
TEST(DeviceStepGroupTest, HopByHopEncodingsAreRefusedOverAGroup) {
  for (const char* spec : {"global-qsgd:bits=4", "global-qsgd:dither=exp"}) {
    for (bool scatter : {false, true}) {
      std::atomic<int> refused{0};
      run_group_world(3, [&](Communicator& comm, test::GroupLikeTransport& group) {
        auto codec = make_codec(spec);
        std::vector<float> values = input_of(comm.rank(), 64);
        std::vector<float> block(codec->reduce_scatter_blocks(64, 3)[comm.rank()].count);
        HostMemoryVector vector(values), out(block);
        try {
          if (scatter) {
            codec->reduce_scatter_mean(comm, vector, out);
          } else {
            codec->allreduce_mean(comm, vector);
          }
        } catch (const InvalidArgument& e) {
          EXPECT_NE(std::string(e.what()).find("MPI mode"), std::string::npos) << e.what();
          ++refused;
        }
        EXPECT_EQ(group.sums(), 0);
        EXPECT_EQ(values, input_of(comm.rank(), 64)) << "the input was changed";
      });
      EXPECT_EQ(refused.load(), 3) << spec << (scatter ? " reduce-scatter" : " allreduce");
    }
  }
}

// One allreduce-mean step of `spec` on `values` on device data and on
// host data: the same bits, finite, identical on every rank; returns the
// device step's result.
std::vector<float> device_step_like_host_step(Communicator& comm, const std::string& spec,
                                              std::vector<float> values) {
  auto on_device = make_codec(spec);
  auto on_host = make_codec(spec);
  auto host_values = values;
  HostMemoryVector vector(values);
  on_device->allreduce_mean(comm, vector);
  on_host->allreduce_mean(comm, std::span<float>(host_values));
  EXPECT_EQ(test::bytes_hash(values), test::bytes_hash(host_values)) << spec;
  for (float v : values) EXPECT_TRUE(std::isfinite(v)) << spec << ": " << v;
  test::expect_identical_across_ranks(comm, values);
  return values;
}

// Values near FLT_MAX, of both signs (`every` > 0: one element in that
// many is near 1 instead).
std::vector<float> near_the_top(int rank, std::size_t every) {
  return test::make_vector(1001, [&](std::size_t i) {
    const float sign = i % 2 ? 1.0f : -1.0f;
    return (every > 0 && i % every == 0 ? 1.0f : 3e38f) * sign * (0.5f + 0.5f * test::noise(rank, i));
  });
}

// fp32 sums that could overflow travel scaled by 2^-k and decode to the
// mean in fp64 (fp32_mean.h): values near FLT_MAX on 3 ranks, device and
// host alike, finite, on every rank the same.
TEST(DeviceStepMixedTest, Fp32SumsNearTheTopOfTheRangeTravelScaled) {
  test::run_world(3, [](Communicator& comm) {
    device_step_like_host_step(comm, "fp32", near_the_top(comm.rank(), 0));
  });
}

// Min-max means of values near FLT_MAX: where the fp32 sum of the decoded
// values overflows, that element is summed again in double and divided
// there (decode_sum.h), on device data as on host data, on qccl's
// transport and over a group alike; the other elements keep the fp32 sum.
TEST(DeviceStepMixedTest, GatheredMeansNearTheTopOfTheRangeAreFinite) {
  std::vector<std::vector<float>> on_ring(3), on_group(3);
  test::run_world(3, [&](Communicator& comm) {
    on_ring[static_cast<std::size_t>(comm.rank())] =
        device_step_like_host_step(comm, "minmax:bucket=64", near_the_top(comm.rank(), 3));
  });
  run_group_world(3, [&](Communicator& comm, test::GroupLikeTransport&) {
    on_group[static_cast<std::size_t>(comm.rank())] =
        device_step_like_host_step(comm, "minmax:bucket=64", near_the_top(comm.rank(), 3));
  });
  EXPECT_EQ(test::bytes_hash(on_ring[0]), test::bytes_hash(on_group[0]))
      << "the group's gathered mean differs from the ring's";
}

// All-zero input on every rank: nothing moves, the result is zero.
TEST(DeviceStepMixedTest, ZeroInputGivesZeros) {
  test::run_world(3, [](Communicator& comm) {
    auto codec = make_codec("global-qsgd:bits=8");
    std::vector<float> values(100, 0.0f);
    HostMemoryVector vector(values);
    codec->allreduce_mean(comm, vector);
    for (float v : values) EXPECT_EQ(v, 0.0f);
  });
}

TEST(DeviceStepRefusalTest, CodecsAndAlgorithmsThatCannotRunOnDevicesAreRefused) {
  test::run_world(2, [](Communicator& comm) {
    std::vector<float> values = input_of(comm.rank(), 64);
    HostMemoryVector vector(values);
    for (const char* spec : {"qsgd", "topk:ratio=0.1", "intdiana", "intdiana:wire=int64",
                             "ef(global-qsgd:bits=8)", "minmax:levels=learned"}) {
      auto codec = make_codec(spec);
      EXPECT_THROW(codec->allreduce_mean(comm, vector), InvalidArgument) << spec;
    }
    auto codec = make_codec("global-qsgd:bits=8");
    EXPECT_THROW(codec->allreduce_mean(comm, vector, {.algorithm = Algorithm::native}), InvalidArgument);
  });
}

// A non-finite value on one rank raises NonFiniteError on every rank, as
// on host data, before anything moves.
TEST(DeviceStepRefusalTest, NonFiniteInputIsReportedOnEveryRank) {
  test::run_world(3, [](Communicator& comm) {
    std::vector<float> values = input_of(comm.rank(), 64);
    if (comm.rank() == 1) values[7] = std::nanf("");
    HostMemoryVector vector(values);
    auto codec = make_codec("global-qsgd:bits=8");
    EXPECT_THROW(codec->allreduce_mean(comm, vector), NonFiniteError);
  });
}

}  // namespace
}  // namespace qccl
