// The ring encodes and decodes a compressed collective's slots while its
// transfers run (CodecQueue): the result must be bitwise what encoding
// everything first and decoding everything last gives, on every rank, and
// the coding must really overlap the transfers.
#include <gtest/gtest.h>

#include <cstring>
#include <tuple>
#include <vector>

#include "../support/counting_transport.h"
#include "../support/sparse_test_reduction.h"
#include "../support/world.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/allgather.h"
#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/codec_queue.h"
#include "qccl/collectives/codec_steps.h"
#include "qccl/collectives/layout.h"
#include "qccl/collectives/reduce_scatter.h"
#include "qccl/collectives/ring.h"

namespace qccl::test {
namespace {

// Values of both signs and many magnitudes, different on every rank.
std::vector<float> rank_input(std::size_t count, int rank) {
  std::vector<float> x(count);
  for (std::size_t i = 0; i < count; ++i) {
    const auto v = static_cast<float>((i * 2654435761u + static_cast<std::size_t>(rank) * 40503u) %
                                      2001u);
    x[i] = (v - 1000.0f) / 37.0f;
  }
  return x;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0);
}

// One ring run of `phases` with Global-QSGD's stochastic 8-bit reduction
// (its rounding depends on each chunk's position and hop), either encoding
// every slot first and decoding every slot last, or through a CodecQueue.
// Returns the decoded slots that the phases leave final on this rank.
std::vector<float> ring_result(Communicator& comm, int tag, std::span<const float> input,
                               RingPhases phases, std::size_t chunk_bytes, bool overlapped) {
  const auto n = static_cast<std::size_t>(comm.size());
  const auto me = static_cast<std::size_t>(comm.rank());
  auto codec = make_codec("global-qsgd");
  auto encoding = codec->encoding_for(50.0, comm.size(), comm.rank(), Algorithm::ring, input);
  Reduction& reduction = *encoding->in_transit();  // 8-bit codes are summed in transit
  const auto segments = split_range({0, input.size()}, n, reduction.granularity());
  SlotLayout layout(segments, chunks_for(segments, chunk_bytes), reduction.granularity(),
                    reduction);
  std::vector<std::byte> work(layout.total_bytes());
  std::vector<float> output(input.size(), -1.0f);
  CollectiveOptions options;
  options.chunk_bytes = chunk_bytes;
  const bool gather_only = phases == RingPhases::allgather;
  const SlotRange encoded = gather_only ? segment_slots(layout, me) : all_slots(layout);
  const SlotRange final_slots = phases == RingPhases::reduce_scatter ? segment_slots(layout, me)
                                                                     : all_slots(layout);
  if (overlapped) {
    CodecQueue queue(reduction, layout, work, {input, 0, {}}, {output, 0}, nullptr);
    run_ring(comm, tag, layout, work, &reduction, phases, options, kTestTimeout, "test",
             &queue);
  } else {
    encode_slots(reduction, layout, encoded, input, 0, work);
    run_ring(comm, tag, layout, work, &reduction, phases, options, kTestTimeout, "test");
    decode_slots(reduction, layout, work, final_slots, output, 0);
  }
  return output;
}

using OverlapParam = std::tuple<int, std::size_t, std::size_t>;
class CodecOverlapTest : public ::testing::TestWithParam<OverlapParam> {};

TEST_P(CodecOverlapTest, OverlappedRingIsBitwiseTheEncodeFirstRing) {
  const auto [ranks, count, chunk_bytes] = GetParam();
  for (RingPhases phases : {RingPhases::both, RingPhases::reduce_scatter, RingPhases::allgather}) {
    run_world(ranks, [&, phases = phases](Communicator& comm) {
      const auto input = rank_input(count, comm.rank());
      const auto plain = ring_result(comm, 1, input, phases, chunk_bytes, false);
      const auto overlapped = ring_result(comm, 2, input, phases, chunk_bytes, true);
      EXPECT_TRUE(same_bits(plain, overlapped))
          << "rank " << comm.rank() << ", phases " << static_cast<int>(phases);
    });
  }
}

INSTANTIATE_TEST_SUITE_P(RanksSizesChunks, CodecOverlapTest,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 7),
                                            ::testing::Values(std::size_t{1}, std::size_t{10},
                                                              std::size_t{1001},
                                                              std::size_t{100003}),
                                            ::testing::Values(std::size_t{64},
                                                              std::size_t{1} << 20)),
                         [](const ::testing::TestParamInfo<OverlapParam>& info) {
                           return "n" + std::to_string(std::get<0>(info.param)) + "_len" +
                                  std::to_string(std::get<1>(info.param)) + "_chunk" +
                                  std::to_string(std::get<2>(info.param));
                         });

// A reduction that notes how many bytes this rank had sent when it encoded
// and decoded: bytes sent between the first and the last encode, and a
// decode before the last send, show that coding overlaps the transfers (the
// call check sends a few bytes before any data moves).
class SendClock final : public Reduction {
 public:
  SendClock(Reduction& inner, const CountingTransport& transport)
      : inner_(inner), transport_(transport) {}
  std::string name() const override { return inner_.name(); }
  std::size_t granularity() const override { return inner_.granularity(); }
  std::size_t max_encoded_bytes(std::size_t count) const override {
    return inner_.max_encoded_bytes(count);
  }
  std::size_t encode(std::span<const float> in, std::size_t first,
                     std::span<std::byte> out) override {
    if (sent_at_first_encode == kNever) sent_at_first_encode = transport_.sent_bytes();
    sent_at_last_encode = transport_.sent_bytes();
    return inner_.encode(in, first, out);
  }
  void decode(std::span<const std::byte> in, std::size_t first, std::span<float> out) override {
    if (sent_at_first_decode == kNever) sent_at_first_decode = transport_.sent_bytes();
    inner_.decode(in, first, out);
  }
  void decode_contribution(std::span<const std::byte> in, std::size_t first,
                           std::span<float> out) override {
    inner_.decode_contribution(in, first, out);
  }
  std::size_t reduce(std::span<const std::byte> incoming, std::span<std::byte> accum,
                     std::size_t accum_bytes, const ReduceContext& context) override {
    return inner_.reduce(incoming, accum, accum_bytes, context);
  }

  static constexpr std::size_t kNever = static_cast<std::size_t>(-1);
  std::size_t sent_at_first_encode = kNever;
  std::size_t sent_at_last_encode = 0;
  std::size_t sent_at_first_decode = kNever;

 private:
  Reduction& inner_;
  const CountingTransport& transport_;
};

// Runs `body(comm, clock)` on 4 ranks whose transports count sent bytes, with
// 1 KiB chunks (many per segment); checks `expect(clock, sent)` on each.
template <class Body, class Expect>
void with_send_clock(Body&& body, Expect&& expect) {
  run_in_process(4, [&](Transport& inner) {
    CountingTransport counting(inner);
    Communicator comm(counting, {kTestTimeout, true});
    SparseTestReduction sparse;
    SendClock clock(sparse, counting);
    body(comm, clock);
    expect(clock, counting.sent_bytes());
  });
}

CollectiveOptions small_chunks() {
  CollectiveOptions options;
  options.chunk_bytes = 1024;
  return options;
}

TEST(CodecOverlap, AllreduceSendsBeforeItHasEncodedEverythingAndDecodesBeforeItsLastSend) {
  const auto input = rank_input(40000, 0);
  with_send_clock(
      [&](Communicator& comm, SendClock& clock) {
        std::vector<float> output(input.size());
        allreduce(comm, input, output, clock, small_chunks());
      },
      [](const SendClock& clock, std::size_t sent) {
        EXPECT_GT(clock.sent_at_last_encode, clock.sent_at_first_encode)
            << "everything was encoded before the first send";
        EXPECT_LT(clock.sent_at_first_decode, sent) << "nothing was decoded before the last send";
      });
}

TEST(CodecOverlap, ReduceScatterSendsBeforeItHasEncodedEverything) {
  const auto input = rank_input(40000, 0);
  with_send_clock(
      [&](Communicator& comm, SendClock& clock) {
        const auto blocks = reduce_scatter_blocks(input.size(), 4, clock.granularity());
        std::vector<float> output(blocks[static_cast<std::size_t>(comm.rank())].count);
        reduce_scatter(comm, input, output, clock, small_chunks());
      },
      [](const SendClock& clock, std::size_t) {
        EXPECT_GT(clock.sent_at_last_encode, clock.sent_at_first_encode)
            << "everything was encoded before the first send";
      });
}

TEST(CodecOverlap, AllgatherDecodesBeforeItsLastSend) {
  const auto shard = rank_input(10000, 0);
  with_send_clock(
      [&](Communicator& comm, SendClock& clock) {
        std::vector<float> output(4 * shard.size());
        const std::vector<Range> shards{{0, 10000}, {10000, 10000}, {20000, 10000}, {30000, 10000}};
        allgather_body(comm, 1, shard, shards, output, clock, small_chunks());
      },
      [](const SendClock& clock, std::size_t sent) {
        EXPECT_LT(clock.sent_at_first_decode, sent) << "nothing was decoded before the last send";
      });
}

}  // namespace
}  // namespace qccl::test
