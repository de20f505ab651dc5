// The reduce-scatter mean and the allgather of host data over a process
// group's whole-vector collectives (group_data_path.h), specified against
// qccl's own ring on the same ranks: where the codec's encoding of an
// element does not depend on how the vector is cut into chunks, the group
// gives the ring's bits on every rank. Ranks {1, 2, 3, 4, 7}, awkward
// lengths, two or three steps (the generator's counter and error
// feedback's residual carry over). Also: what each operation sends through
// the group, the hop-by-hop encodings refused by name, and a malformed
// message refused as corrupt on the rank that reads it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "../support/group_transport.h"
#include "../support/patterns.h"
#include "../support/world.h"
#include "qccl/codecs/codec.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/common/errors.h"

namespace qccl {
namespace {

std::vector<float> input_of(int rank, std::size_t length) {
  return test::make_vector(length, [rank](std::size_t i) {
    return test::noise(rank, i) * std::ldexp(1.0f, static_cast<int>(i % 7) - 3);
  });
}

// Integer values: fp32 sums of them are exact in any order.
std::vector<float> integers_of(int rank, std::size_t length) {
  return test::make_vector(length, [rank](std::size_t i) {
    return static_cast<float>(static_cast<int>((i * 37 + static_cast<std::size_t>(rank) * 11) % 201) - 100);
  });
}

void run_group_world(int ranks, const std::function<void(Communicator&, test::GroupLikeTransport&)>& body) {
  run_in_process(ranks, [&](Transport& transport) {
    test::GroupLikeTransport group(transport);
    Communicator comm(group, {test::kTestTimeout, true});
    body(comm, group);
  });
}

// Each rank's results of `steps` calls of `operation` over a group or on
// qccl's own transport, one codec instance per rank and side.
using Operation = std::function<std::vector<float>(Communicator&, Codec&, int step)>;
std::vector<std::vector<float>> results_of(const std::string& spec, int ranks, bool over_group,
                                           int steps, const Operation& operation) {
  std::vector<std::vector<float>> results(static_cast<std::size_t>(ranks));
  const auto body = [&](Communicator& comm) {
    auto codec = make_codec(spec, CodecSettings{.seed = 9, .bucket = 4});
    std::vector<float> all;
    for (int step = 0; step < steps; ++step) {
      const auto out = operation(comm, *codec, step);
      all.insert(all.end(), out.begin(), out.end());
    }
    results[static_cast<std::size_t>(comm.rank())] = all;
  };
  if (over_group) {
    // The data goes by the group's collectives, not point to point, where
    // only the steps' checks go (under 1 KiB a rank per call).
    run_group_world(ranks, [&](Communicator& comm, test::GroupLikeTransport& group) {
      body(comm);
      EXPECT_LT(group.p2p_bytes(), std::size_t{1024} * static_cast<std::size_t>(ranks * steps)) << spec;
    });
  } else {
    test::run_world(ranks, body);
  }
  return results;
}

void expect_group_equals_ring(const std::string& spec, int ranks, std::size_t length, int steps,
                              const Operation& operation) {
  const auto group = results_of(spec, ranks, true, steps, operation);
  const auto ring = results_of(spec, ranks, false, steps, operation);
  for (int r = 0; r < ranks; ++r) {
    ASSERT_EQ(test::bytes_hash(group[r]), test::bytes_hash(ring[r]))
        << spec << " ranks " << ranks << " length " << length << " rank " << r;
  }
}

// Summed encodings (exact integer sums, fp32 sums of integers) and
// gathered ones (each rank's chunk decoded and added in rank order), with
// error feedback, whose residual needs this rank's own Q(x).
TEST(GroupOperationsTest, ReduceScatterEqualsQcclsOwnBitForBit) {
  const std::vector<std::string> specs{"fp32", "global-qsgd:bits=8", "global-qsgd:bits=8,norm=2",
                                       "intsgd-heuristic:round=deterministic,wire=int32",
                                       "intsgd-heuristic:wire=int64", "minmax",
                                       "minmax:bits=3,bucket=37,rounding=dither", "minmax:bucket=0",
                                       "minmax:bits=3,bucket=0,rounding=shift", "qsgd",
                                       "ef(global-qsgd:bits=8)"};
  for (const std::string& spec : specs) {
    ASSERT_TRUE(make_codec(spec)->traits().operations.reduce_scatter_mean) << spec;
    for (int ranks : {1, 2, 3, 4, 7}) {
      for (std::size_t length : {std::size_t{1}, std::size_t{1001}, std::size_t{70001}}) {
        expect_group_equals_ring(spec, ranks, length, 3, [&](Communicator& comm, Codec& codec, int step) {
          const auto input = spec == "fp32" ? integers_of(comm.rank() + step, length)
                                            : input_of(comm.rank() + step, length);
          std::vector<float> block(codec.reduce_scatter_blocks(length, comm.size())[comm.rank()].count);
          codec.reduce_scatter_mean(comm, input, block);
          return block;
        });
      }
    }
  }
}

// Any encoding can be gathered: nothing is combined.
TEST(GroupOperationsTest, AllgatherEqualsQcclsOwnBitForBit) {
  const std::vector<std::string> specs{"fp32", "fp16", "global-qsgd:bits=8", "global-qsgd:bits=4",
                                       "global-qsgd:dither=exp", "minmax",
                                       "minmax:bits=3,bucket=0,rounding=dither", "qsgd"};
  for (const std::string& spec : specs) {
    ASSERT_TRUE(make_codec(spec)->traits().operations.allgather) << spec;
    for (int ranks : {1, 2, 3, 4, 7}) {
      for (std::size_t shard : {std::size_t{2}, std::size_t{334}, std::size_t{23336}}) {
        expect_group_equals_ring(spec, ranks, shard, 2, [&](Communicator& comm, Codec& codec, int step) {
          std::vector<float> output(shard * static_cast<std::size_t>(comm.size()));
          codec.allgather(comm, input_of(comm.rank() + step, shard), output);
          return output;
        });
      }
    }
  }
}

// A summed reduce-scatter sums the whole vector once (one integer SUM a
// step, no allgather); a gathered one and an allgather gather once each
// and sum nothing.
TEST(GroupOperationsTest, WhatEachOperationAsksOfTheGroup) {
  run_group_world(3, [](Communicator& comm, test::GroupLikeTransport& group) {
    const auto input = input_of(comm.rank(), 999);
    std::vector<float> block(333), output(999);
    make_codec("global-qsgd:bits=8")->reduce_scatter_mean(comm, input, block);
    EXPECT_EQ(group.sums(), 1);
    EXPECT_EQ(group.allgathers(), 0);
    make_codec("minmax:bucket=111")->reduce_scatter_mean(comm, input, block);
    EXPECT_EQ(group.allgathers(), 1);
    make_codec("global-qsgd:bits=8")->allgather(comm, block, output);
    EXPECT_EQ(group.allgathers(), 2);
    EXPECT_EQ(group.sums(), 1);
  });
}

// Encodings combined hop by hop (4-bit averaging, exponential dithering)
// cannot be reduced by a group: the reduce-scatter is refused on every
// rank, naming the MPI mode, before anything moves (the communicator stays
// usable); their allgather runs.
TEST(GroupOperationsTest, HopByHopEncodingsAreRefusedForTheReduceScatterOnly) {
  for (const char* spec : {"global-qsgd:bits=4", "global-qsgd:dither=exp"}) {
    std::atomic<int> refused{0};
    run_group_world(3, [&](Communicator& comm, test::GroupLikeTransport&) {
      auto codec = make_codec(spec);
      const auto input = input_of(comm.rank(), 60);
      std::vector<float> block(codec->reduce_scatter_blocks(60, 3)[comm.rank()].count), output(180);
      try {
        codec->reduce_scatter_mean(comm, input, block);
      } catch (const InvalidArgument& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr("MPI mode"));
        ++refused;
      }
      EXPECT_NO_THROW(codec->allgather(comm, input, output)) << spec;
    });
    EXPECT_EQ(refused.load(), 3) << spec;
  }
}

// A group whose allgather hands back rank 1's reduce-scatter message with
// one entry of its table (`entry`) changed by `delta` bytes.
class CorruptingGroup final : public test::ForwardingTransport, public GroupCollectives {
 public:
  CorruptingGroup(Transport& inner, std::size_t entry, std::int64_t delta)
      : ForwardingTransport(inner), entry_(entry), delta_(delta) {}
  void allgather(std::span<const std::byte> input, std::span<std::byte> output,
                 std::span<const std::size_t> byte_counts, Timeout timeout) override {
    inner().allgather(input, output, byte_counts, timeout);
    std::byte* at = output.data() + byte_counts[0] + entry_ * sizeof(std::uint64_t);
    std::uint64_t size = 0;
    std::memcpy(&size, at, sizeof size);
    size += static_cast<std::uint64_t>(delta_);
    std::memcpy(at, &size, sizeof size);
  }
  void sum_integers(std::span<std::byte>, std::size_t, Timeout) override {
    throw std::logic_error("a gathered codec sums no integers");
  }

 private:
  std::size_t entry_;
  std::int64_t delta_;
};

// Every rank reads the whole table, so each refuses the corrupt message
// whichever block it wants: a size past the message's end, or sizes that
// leave bytes over.
TEST(GroupOperationsTest, AMalformedReduceScatterMessageIsACommErrorOnEveryRank) {
  for (const auto& [entry, delta] : {std::pair<std::size_t, std::int64_t>{0, std::int64_t{1} << 40},
                                     {2, 1}, {2, -1}}) {
    std::atomic<int> corrupt{0};
    run_in_process(3, [&](Transport& transport) {
      CorruptingGroup group(transport, entry, delta);
      Communicator comm(group, {test::kTestTimeout, true});
      const auto input = input_of(comm.rank(), 90);
      std::vector<float> block(30);
      try {
        make_codec("minmax:bucket=10")->reduce_scatter_mean(comm, input, block);
      } catch (const CommError& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr("corrupt message"));
        ++corrupt;
      }
    });
    EXPECT_EQ(corrupt.load(), 3) << "entry " << entry << " changed by " << delta;
  }
}

}  // namespace
}  // namespace qccl
