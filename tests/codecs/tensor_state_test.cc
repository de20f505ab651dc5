// Tensor layouts and per-tensor codec state: layouts are checked, the store
// round-trips and rejects damaged bytes, and state kept by tensor name
// follows the tensors when the bucket layout changes — a run re-planned
// midway ends bitwise equal to one that never was.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "../support/codec_checks.h"
#include "../support/patterns.h"
#include "../support/world.h"
#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/codecs/tensor_layout.h"
#include "qccl/codecs/tensor_state.h"
#include "qccl/common/errors.h"

namespace qccl::test {
namespace {

using ::testing::HasSubstr;

TEST(TensorLayoutTest, NamesShapesAndPlacesAreChecked) {
  const std::vector<std::string> names{"fc.weight", "fc.bias"};
  const std::vector<std::vector<std::int64_t>> shapes{{3, 4}, {3}};
  const auto layout = TensorLayout::of_shapes(names, shapes);
  EXPECT_EQ(layout.total(), 15u);
  EXPECT_EQ(layout.tensor_count(), 2u);
  const auto tensors = layout.tensors(15);
  EXPECT_EQ(tensors[1].name, "fc.bias");
  EXPECT_EQ(tensors[1].offset, 12u);
  EXPECT_EQ(tensors[0].shape, (std::vector<std::int64_t>{3, 4}));
  EXPECT_NO_THROW(layout.check(15, "x"));
  EXPECT_THAT([&] { layout.check(16, "bucket 2"); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("bucket 2: the tensors of its "
                                                                  "layout hold 15 elements")));
  EXPECT_THROW(TensorLayout({{"a", {2}, 0, 2}, {"a", {2}, 2, 2}}), InvalidArgument);  // twice
  EXPECT_THROW(TensorLayout({{"a", {2}, 0, 2}, {"b", {2}, 3, 2}}), InvalidArgument);  // a gap
  EXPECT_THROW(TensorLayout({{"a", {2, 3}, 0, 5}}), InvalidArgument);                 // shape
  EXPECT_THROW(TensorLayout({{"", {2}, 0, 2}}), InvalidArgument);                     // no name
  // Unnamed: one tensor of whatever length a call has.
  const TensorLayout unnamed;
  EXPECT_TRUE(unnamed.unnamed());
  EXPECT_EQ(unnamed.tensors(42)[0].elements, 42u);
  EXPECT_NO_THROW(unnamed.check(42, "x"));
  EXPECT_NE(layout.fingerprint(), TensorLayout::of_sizes(std::vector<std::size_t>{12, 3}).fingerprint());
}

TEST(TensorStateStoreTest, KeepsBuffersByTensorAndFieldAndRoundTrips) {
  TensorStateStore store;
  auto a = store.floats("w", "ef.residual", 3);
  a[1] = 2.5f;
  EXPECT_EQ(store.floats("w", "ef.residual", 3)[1], 2.5f);  // the same buffer
  auto b = store.doubles("w", "intsgd.scale", 2);
  b[0] = 1.0;
  EXPECT_TRUE(store.contains("w", "intsgd.scale"));
  EXPECT_FALSE(store.contains("v", "intsgd.scale"));
  EXPECT_THAT([&] { store.floats("w", "ef.residual", 4); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("of tensor 'w' holds 3 values")));
  const auto bytes = store.save();
  TensorStateStore loaded;
  loaded.load(bytes);
  EXPECT_EQ(loaded.size(), 2u);
  EXPECT_EQ(loaded.floats("w", "ef.residual", 3)[1], 2.5f);
  EXPECT_EQ(loaded.doubles("w", "intsgd.scale", 2)[0], 1.0);
  // Damaged bytes are refused whole; the store keeps what it had.
  const std::vector<std::byte> truncated(bytes.begin(), bytes.end() - 1);
  auto trailing = bytes;
  trailing.push_back(std::byte{0});
  auto foreign = bytes;
  foreign[10] = std::byte{'X'};
  for (const auto& bad : {truncated, trailing, foreign}) {
    EXPECT_THROW(loaded.load(bad), InvalidArgument);
    EXPECT_EQ(loaded.size(), 2u);
  }
}

// A tensor with no elements (a zero-sized layer) keeps an empty buffer,
// whose storage may be a null pointer: it saves and loads like any other,
// in the store and through a codec's state, without copying from or to
// null (undefined behaviour even for zero bytes, which UBSan reports).
TEST(TensorStateStoreTest, AZeroElementTensorSavesAndLoads) {
  TensorStateStore store;
  store.floats("empty", "ef.residual", 0);
  store.doubles("w", "intsgd.scale", 2)[1] = -2.0;
  TensorStateStore loaded;
  loaded.load(store.save());
  EXPECT_TRUE(loaded.contains("empty", "ef.residual"));
  EXPECT_EQ(loaded.floats("empty", "ef.residual", 0).size(), 0u);
  EXPECT_EQ(loaded.doubles("w", "intsgd.scale", 2)[1], -2.0);
  const std::vector<std::string> names{"w", "empty", "b"};
  const std::vector<std::vector<std::int64_t>> shapes{{2, 3}, {0, 4}, {3}};
  for (const std::string spec : {"ef(global-qsgd)", "intsgd", "signum", "topk"}) {
    run_world(2, [&](Communicator& comm) {
      check_codec_resumes_exactly(comm, spec, TensorLayout::of_shapes(names, shapes));
    });
  }
}

// Three tensors, reduced in two buckets. Run A keeps buckets {a, b}, {c};
// run B switches to {a}, {b, c} after three steps, with new codec instances
// on the same store. Deterministic integer codecs with a scale per tensor
// reduce each element the same way whatever the grouping, so the runs end
// bitwise equal exactly when every piece of per-tensor state (IntSGD's
// moving averages and step sizes, IntDIANA's shifts, the EF residuals) has
// followed its tensor.
std::map<std::string, std::vector<float>> run_with_layouts(const std::string& spec, int switch_at,
                                                           bool fresh_store = false) {
  const std::vector<std::string> names{"a", "b", "c"};
  const std::vector<std::size_t> sizes{50, 70, 30};
  std::map<std::string, std::vector<float>> result;
  std::mutex mutex;
  run_world(3, [&](Communicator& comm) {
    auto store = std::make_shared<TensorStateStore>();
    std::vector<std::vector<std::size_t>> groups{{0, 1}, {2}};
    std::vector<std::unique_ptr<Codec>> codecs;
    auto plan = [&](std::uint64_t step) {
      codecs.clear();
      for (std::size_t g = 0; g < groups.size(); ++g) {
        std::vector<std::string> group_names;
        std::vector<std::vector<std::int64_t>> shapes;
        for (std::size_t t : groups[g]) {
          group_names.push_back(names[t]);
          shapes.push_back({static_cast<std::int64_t>(sizes[t])});
        }
        codecs.push_back(make_codec(spec, {.seed = 2, .bucket = g}));
        codecs.back()->set_layout(TensorLayout::of_shapes(group_names, shapes), store);
        codecs.back()->set_step(step);
      }
    };
    plan(0);
    std::map<std::string, std::vector<float>> last;
    for (int step = 0; step < 6; ++step) {
      if (step == switch_at) {
        groups = {{0}, {1, 2}};
        if (fresh_store) store = std::make_shared<TensorStateStore>();
        plan(static_cast<std::uint64_t>(step));
      }
      for (std::size_t g = 0; g < groups.size(); ++g) {
        std::vector<float> bucket;
        for (std::size_t t : groups[g]) {
          for (std::size_t i = 0; i < sizes[t]; ++i) bucket.push_back(noise(comm.rank() + 3 * step, 100 * t + i));
        }
        codecs[g]->allreduce_mean(comm, bucket);
        std::vector<float> update(bucket.size());
        for (std::size_t i = 0; i < bucket.size(); ++i) update[i] = -0.1f * bucket[i];
        if (StepFeedback* f = codecs[g]->step_feedback()) f->observe_step(0.1, update);
        std::size_t at = 0;
        for (std::size_t t : groups[g]) {
          last[names[t]].assign(bucket.begin() + static_cast<long>(at),
                                bucket.begin() + static_cast<long>(at + sizes[t]));
          at += sizes[t];
        }
      }
    }
    std::lock_guard lock(mutex);
    if (comm.rank() == 0) result = last;
  });
  return result;
}

TEST(TensorStateTest, StateFollowsTensorsAcrossBucketLayouts) {
  for (const std::string spec :
       {"intsgd:round=deterministic,wire=int32", "intdiana:round=deterministic,wire=int32",
        "ef(intsgd:round=deterministic,wire=int32)"}) {
    const auto fixed = run_with_layouts(spec, -1);
    const auto replanned = run_with_layouts(spec, 3);
    ASSERT_EQ(fixed.size(), 3u);
    for (const auto& [name, values] : fixed) {
      EXPECT_EQ(replanned.at(name), values) << spec << ": tensor " << name;
    }
    // The control: re-planned onto an empty store, the state is lost and
    // every tensor ends elsewhere — so the comparison above can fail.
    const auto forgotten = run_with_layouts(spec, 3, true);
    for (const auto& [name, values] : fixed) {
      EXPECT_NE(forgotten.at(name), values) << spec << ": tensor " << name;
    }
  }
}

}  // namespace
}  // namespace qccl::test
