// The sharded engine (QSDP): with fp32 both ways it is data parallelism
// (and one process on the concatenated batch) up to float summation order,
// for any rank count and block sizes no rank count divides; with quantized
// weights every rank computes with bitwise the same weights, forward and
// backward alike; every matrix is a group (a layer) of its own and learned
// levels go only to large layers; resume is exact; non-finite gradients
// fail every rank and leave the engine usable; and misuse is refused with
// a message.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <map>
#include <mutex>
#include <sstream>

#include "qccl/common/errors.h"
#include "qccl/engines/sharded.h"
#include "qccl/models/tasks.h"
#include "qccl/training/train_config.h"
#include "engines/one_process.h"
#include "engines/train_helpers.h"
#include "support/world.h"

namespace qccl::engines {
namespace {

using test::run_world;
using namespace test_support;

// A small GPT whose sizes no rank count of 2..7 divides (width 37: blocks
// of 16 354 matrix elements and 333 vector elements; 3 blocks).
TrainConfig small_gpt(const std::string& gradients, const std::string& weights) {
  TrainConfig c;
  c.model = "gpt";
  c.data = "fortunes";
  c.engine = "sharded";
  c.codec = CodecSpec::parse(gradients);
  c.weights_codec = CodecSpec::parse(weights);
  c.hidden = 37;
  c.layers = 3;
  c.sequence_length = 16;
  c.batch = 4;
  c.optimizer = "sgd";
  c.lr = 0.05;
  c.max_steps_per_epoch = 4;
  c.progress = false;
  c.return_parameters = true;
  return c;
}

// One rank's task (initialised from `config.seed`) and a sharded engine
// over its model with `config`'s codecs, running the model's blocks.
struct ShardedRank {
  std::unique_ptr<Task> task;
  std::unique_ptr<ShardedEngine> engine;
  ShardedRank(Communicator& comm, const TrainConfig& config,
              std::size_t learned_levels_min = ShardedOptions{}.learned_levels_min)
      : task(make_task(config)) {
    task->initialize(config.seed);
    ShardedOptions options;
    options.weights_codec = config.weights_codec;
    options.gradients_codec = config.codec;
    options.learned_levels_min = learned_levels_min;
    engine = std::make_unique<ShardedEngine>(comm, sharded_units(task->model(), task->blocks()),
                                             options);
    task->set_block_runner(engine.get());
  }
  ~ShardedRank() { task->set_block_runner(nullptr); }
};

class RankCounts : public ::testing::TestWithParam<int> {};

TEST_P(RankCounts, Fp32ShardedIsDataParallelAndOneProcess) {
  const int ranks = GetParam();
  const auto config = small_gpt("fp32", "fp32");
  const auto sharded = train_on(ranks, config);
  auto replicated = config;
  replicated.engine = "data-parallel";
  const auto data_parallel = train_on(ranks, replicated);
  ASSERT_EQ(sharded[0].steps, 4u);
  EXPECT_EQ(sharded[0].parameters, data_parallel[0].parameters);
  for (int r = 1; r < ranks; ++r) {
    EXPECT_TRUE(bitwise_equal(sharded[0].final_parameters,
                              sharded[static_cast<std::size_t>(r)].final_parameters));
  }
  EXPECT_LT(worst_difference(sharded[0].final_parameters, data_parallel[0].final_parameters), 1e-5);
  const auto steps = config.max_steps_per_epoch;
  const double against_one =
      worst_difference(sharded[0].final_parameters, one_process_sgd(config, ranks, steps));
  if (ranks == 1) {
    // Nothing to sum: recomputing each block gives bitwise the gradients
    // of one ordinary backward pass.
    EXPECT_EQ(against_one, 0.0);
  } else {
    EXPECT_LT(against_one, 1e-5);
    EXPECT_GT(against_one, 0.0) << "suspiciously exact: did the sharded engine run at all?";
  }
  // Batches shifted by one sample: far beyond that tolerance.
  EXPECT_GT(worst_difference(sharded[0].final_parameters, one_process_sgd(config, ranks, steps, 1)),
            1e-3);
}

INSTANTIATE_TEST_SUITE_P(Ranks, RankCounts, ::testing::Values(1, 2, 3, 4, 7));

// Every rank — each shard's owner too — computes with the same decoded
// weights (their checksums agree after every oracle, and move as training
// moves the weights), and its backward pass sees the weights its forward
// pass saw (the engine checks that itself at every backward gather).
TEST(Sharded, QuantizedWeightsAreBitwiseTheSameOnEveryRank) {
  const int ranks = 3;
  auto config = small_gpt("minmax:bits=4", "minmax:bits=4,rounding=shift");
  config.return_parameters = false;
  std::vector<std::vector<std::uint64_t>> checksums(ranks);
  std::vector<std::size_t> peaks(ranks), totals(ranks);
  run_world(ranks, [&](Communicator& comm) {
    ShardedRank rank(comm, config);
    auto& task = rank.task;
    auto& engine = *rank.engine;
    torch::optim::SGD sgd(engine.optimizer_parameters(), torch::optim::SGDOptions(0.1));
    const std::vector<std::uint32_t> samples{static_cast<std::uint32_t>(comm.rank()), 11, 23};
    const auto batch = task->batch(samples, false);
    for (int step = 0; step < 3; ++step) {
      OracleResult result;
      engine.compute_gradients([&] { return task->loss(batch); }, result);
      EXPECT_TRUE(std::isfinite(result.loss));
      sgd.step();
      checksums[static_cast<std::size_t>(comm.rank())].push_back(engine.computed_checksum());
    }
    peaks[static_cast<std::size_t>(comm.rank())] = engine.peak_gathered_elements();
    totals[static_cast<std::size_t>(comm.rank())] = engine.elements();
  });
  for (int r = 1; r < ranks; ++r) EXPECT_EQ(checksums[0], checksums[static_cast<std::size_t>(r)]);
  EXPECT_NE(checksums[0][0], checksums[0][1]);
  EXPECT_NE(checksums[0][1], checksums[0][2]);
  // Never the whole model at once: unit 0 and at most two blocks.
  EXPECT_LT(peaks[0], totals[0]);
}

// One oracle's bytes in closed form (fp32 both ways: in all, every shard of
// a gathered group is sent n − 1 times, and so is every block of a
// reduce-scattered one): every group's gradients once; unit 0's groups (its
// matrices and every unit's vectors) and the last block's matrices gathered
// once; the other blocks' twice, for forward and again for backward.
TEST(Sharded, AnOracleGathersUnitZeroAndTheLastBlockOnceAndTheOtherBlocksTwice) {
  const int ranks = 3;
  const auto config = small_gpt("fp32", "fp32");
  ASSERT_GE(config.layers, 2) << "no block but the last would be gathered twice";
  std::vector<std::uint64_t> sent(ranks);
  std::uint64_t exchanged_elements = 0;
  run_world(ranks, [&](Communicator& comm) {
    ShardedRank rank(comm, config);
    auto& engine = *rank.engine;
    const std::vector<std::uint32_t> samples{static_cast<std::uint32_t>(comm.rank()), 5};
    const auto batch = rank.task->batch(samples, false);
    const std::uint64_t before = engine.bytes_sent();
    OracleResult result;
    engine.compute_gradients([&] { return rank.task->loss(batch); }, result);
    sent[static_cast<std::size_t>(comm.rank())] = engine.bytes_sent() - before;
    if (comm.rank() != 0) return;
    for (std::size_t g = 0; g < engine.bucket_count(); ++g) {
      const auto name = engine.describe_group(g);  // "NAME, E elements"
      const auto comma = name.rfind(", ");
      const std::uint64_t elements = std::stoull(name.substr(comma + 2));
      const bool last = name.starts_with("blocks." + std::to_string(config.layers - 1) + ":");
      const bool twice = name.starts_with("blocks.") && !last;
      exchanged_elements += (twice ? 2 : 1) * elements + elements;  // gathers, reduce-scatter
    }
  });
  std::uint64_t total = 0;
  for (const auto bytes : sent) total += bytes;
  EXPECT_EQ(total, static_cast<std::uint64_t>(ranks - 1) * sizeof(float) * exchanged_elements);
}

// QSDP §5 quantizes per layer: every matrix is a group of its own (so no
// bucket straddles two layers), and learned levels (§5.2) go to the layers
// of at least the threshold, not to whole blocks. At width 37 a block's
// `up` and `down` hold 5476 elements each, `qkv` 4107 and `proj` 1369 (the
// block 16 428 together): a threshold of 5000 learns `up` and `down` only.
// Biases and norms, every unit's in one group, stay fp32 both ways.
TEST(Sharded, GroupsAreLayersAndLearnedLevelsFollowTheThresholdPerLayer) {
  auto config = small_gpt("minmax:bits=4,levels=learned", "minmax:bits=6,levels=learned");
  run_world(2, [&](Communicator& comm) {
    ShardedRank rank(comm, config, 5000);
    const auto& engine = *rank.engine;
    std::map<std::string, std::int64_t> sizes;  // of a model no engine has sharded
    const auto reference = make_task(config);
    for (const auto& item : reference->model().named_parameters()) {
      if (item.value().dim() >= 2) sizes[item.key()] = item.value().numel();
    }
    std::size_t learned = 0, uniform = 0, full = 0, layers = 0;
    for (std::size_t g = 0; g < engine.bucket_count(); ++g) {
      const auto name = engine.describe_group(g);  // "UNIT: PARAMETER, E elements"
      const auto weights = engine.group_weights_spec(g), gradients = engine.group_gradients_spec(g);
      if (name.find("biases and norms") != std::string::npos) {
        EXPECT_EQ(weights, "fp32") << name;
        EXPECT_EQ(gradients, "fp32") << name;
        ++full;
        continue;
      }
      const auto colon = name.find(": "), comma = name.rfind(", ");
      const auto parameter = name.substr(colon + 2, comma - colon - 2);
      const auto elements = std::stoll(name.substr(comma + 2));
      ASSERT_TRUE(sizes.contains(parameter)) << "not one layer: " << name;
      EXPECT_EQ(elements, sizes[parameter]) << name;
      ++layers;
      if (elements >= 5000) {
        EXPECT_NE(weights.find("levels=learned"), std::string::npos) << name;
        EXPECT_NE(gradients.find("levels=learned"), std::string::npos) << name;
        ++learned;
      } else {
        EXPECT_NE(weights.find("levels=uniform"), std::string::npos) << name;
        EXPECT_NE(gradients.find("levels=uniform"), std::string::npos) << name;
        ++uniform;
      }
    }
    EXPECT_EQ(layers, sizes.size());  // every matrix, each once
    EXPECT_EQ(learned, 2u * config.layers);
    EXPECT_EQ(uniform, sizes.size() - 2u * config.layers);
    EXPECT_EQ(full, 1u);  // every unit's vectors in one group
  });
}

// Interrupted and resumed from its checkpoint, a quantized run with learned
// levels refitted along the way ends bitwise equal to an uninterrupted one.
TEST(Sharded, ResumeIsExact) {
  auto config = small_gpt("minmax:bits=4,levels=learned,refit=2",
                          "minmax:bits=6,levels=learned,refit=2");
  config.optimizer = "adam";
  config.lr = 0.003;
  config.epochs = 2;
  const auto whole = train_on(3, config);
  const auto resumed = interrupted_and_resumed(3, config, 5);
  EXPECT_EQ(resumed[0].steps, 3u);
  for (std::size_t r = 0; r < 3; ++r) {
    EXPECT_TRUE(bitwise_equal(whole[r].final_parameters, resumed[r].final_parameters)) << "rank " << r;
  }
}

// A checkpoint of another layout (here one block fewer: unit 0's matrices
// agree, every unit's vectors do not) is refused with the group named, and
// leaves every shard as it was, the groups read before the mismatch too.
TEST(Sharded, ACheckpointOfAnotherLayoutIsRefusedAndChangesNothing) {
  const auto written = small_gpt("fp32", "fp32");
  auto other = written;
  other.layers = 2;
  other.seed = 2;
  run_world(2, [&](Communicator& comm) {
    std::stringstream bytes;
    {
      ShardedRank rank(comm, written);
      torch::serialize::OutputArchive archive;
      rank.engine->save(archive);
      archive.save_to(bytes);
    }
    ShardedRank rank(comm, other);
    std::vector<torch::Tensor> before;
    for (const auto& shard : rank.engine->optimizer_parameters()) before.push_back(shard.clone());
    torch::serialize::InputArchive archive;
    archive.load_from(bytes);
    try {
      rank.engine->load(archive);
      ADD_FAILURE() << "a checkpoint of three blocks loaded into two";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("biases and norms"), std::string::npos) << e.what();
    }
    const auto after = rank.engine->optimizer_parameters();
    ASSERT_EQ(after.size(), before.size());
    for (std::size_t g = 0; g < after.size(); ++g) EXPECT_TRUE(torch::equal(after[g], before[g])) << g;
  });
}

// NaN in one rank's loss fails the oracle on every rank, naming the step and
// the group; the next oracle works.
TEST(Sharded, NonFiniteGradientsFailEveryRankAndTheNextOracleWorks) {
  const auto config = small_gpt("minmax:bits=8", "minmax:bits=8,rounding=shift");
  std::mutex mutex;
  std::vector<std::string> messages;
  run_world(2, [&](Communicator& comm) {
    ShardedRank rank(comm, config);
    auto& task = rank.task;
    auto& engine = *rank.engine;
    const std::vector<std::uint32_t> samples{1, 2};
    const auto batch = task->batch(samples, false);
    OracleResult result;
    try {
      engine.compute_gradients(
          [&] {
            const auto loss = task->loss(batch);
            return comm.rank() == 1 ? loss * std::nan("") : loss;
          },
          result);
      ADD_FAILURE() << "no NonFiniteError on rank " << comm.rank();
    } catch (const NonFiniteError& e) {
      const std::lock_guard lock(mutex);
      messages.push_back(e.what());
    }
    OracleResult next;
    engine.compute_gradients([&] { return task->loss(batch); }, next);
    EXPECT_TRUE(std::isfinite(next.loss));
    for (const auto& p : engine.optimizer_parameters()) {
      EXPECT_TRUE(torch::isfinite(p.grad()).all().item<bool>());
    }
  });
  ASSERT_EQ(messages.size(), 2u);
  for (const auto& m : messages) {
    EXPECT_NE(m.find("step 0"), std::string::npos) << m;
    EXPECT_NE(m.find("gradients of blocks.2"), std::string::npos) << m;
  }
}

// Blocks run outside an oracle, or an oracle while the model is gathered,
// are refused; gathering the model gives the exact parameters, nested.
TEST(Sharded, MisuseIsRefusedAndTheWholeModelIsExact) {
  const auto config = small_gpt("fp32", "minmax:bits=2,rounding=shift");
  run_world(2, [&](Communicator& comm) {
    auto task = make_task(config);
    task->initialize(1);
    const auto initial = flat_parameters(task->model());
    ShardedOptions options;
    options.weights_codec = config.weights_codec;
    ShardedEngine engine(comm, sharded_units(task->model(), task->blocks()), options);
    task->set_block_runner(&engine);
    const std::vector<std::uint32_t> samples{3};
    const auto batch = task->batch(samples, false);
    EXPECT_ANY_THROW(task->loss(batch));  // the weights are not here (the embedding is empty)
    engine.gather_model();
    engine.gather_model();
    engine.release_model();
    EXPECT_TRUE(bitwise_equal(initial, flat_parameters(task->model())));  // exact, not the 2-bit weights
    EXPECT_TRUE(std::isfinite(task->loss(batch).item<double>()));
    OracleResult result;
    EXPECT_THROW(engine.compute_gradients([&] { return task->loss(batch); }, result),
                 InvalidArgument);
    engine.release_model();
    for (const auto& p : task->model().parameters()) EXPECT_EQ(p.numel(), 0);
    task->set_block_runner(nullptr);
  });
}

// The weights the oracles compute with (QSDP's Q^w(W)): gather_computed_model
// puts the weights codec's gather into the model — with 4-bit weights on
// the shifted lattice every value within half a step of its layer's range
// of the exact one, and not all equal to it — and leaves training as it
// was: with learned levels refitted along the way (steps 1 and 2), runs
// that gather Q^w after every step end bitwise where runs that do not end.
// With fp32 weights there are no others: false, nothing gathered.
TEST(Sharded, TheComputedWeightsAreQuantizedAndLeaveTrainingAsItWas) {
  auto config = small_gpt("minmax:bits=4,levels=learned,refit=1",
                          "minmax:bits=4,rounding=shift,levels=learned,refit=1");
  std::vector<std::vector<float>> ends(2);
  for (const bool evaluate : {false, true}) {
    run_world(2, [&](Communicator& comm) {
      ShardedRank rank(comm, config, 1000);
      auto& engine = *rank.engine;
      torch::optim::SGD sgd(engine.optimizer_parameters(), torch::optim::SGDOptions(0.1));
      const std::vector<std::uint32_t> samples{static_cast<std::uint32_t>(comm.rank()), 7};
      const auto batch = rank.task->batch(samples, false);
      for (int step = 0; step < 3; ++step) {
        OracleResult result;
        engine.compute_gradients([&] { return rank.task->loss(batch); }, result);
        sgd.step();
        if (!evaluate) continue;
        ASSERT_TRUE(engine.gather_computed_model());
        const auto computed = flat_parameters(rank.task->model());
        engine.release_model();
        engine.gather_model();
        const auto exact = flat_parameters(rank.task->model());
        engine.release_model();
        ASSERT_EQ(computed.size(), exact.size());
        EXPECT_FALSE(bitwise_equal(computed, exact)) << "step " << step;
      }
      engine.gather_model();  // collective
      if (comm.rank() == 0) ends[evaluate ? 1 : 0] = flat_parameters(rank.task->model());
      engine.release_model();
    });
  }
  EXPECT_TRUE(bitwise_equal(ends[0], ends[1]));

  // Uniform 4-bit levels on the shifted lattice: within δ/2 of the exact
  // value, δ at most the layer's range over 15.
  const auto uniform = small_gpt("fp32", "minmax:bits=4,rounding=shift");
  run_world(2, [&](Communicator& comm) {
    ShardedRank rank(comm, uniform);
    auto& engine = *rank.engine;
    ASSERT_TRUE(engine.gather_computed_model());
    std::vector<torch::Tensor> computed;
    for (const auto& p : rank.task->model().parameters()) computed.push_back(p.detach().clone());
    engine.release_model();
    engine.gather_model();
    const auto exact = rank.task->model().parameters();
    for (std::size_t j = 0; j < exact.size(); ++j) {
      if (exact[j].dim() < 2) {
        EXPECT_TRUE(torch::equal(computed[j], exact[j])) << "vectors stay fp32";
        continue;
      }
      const double range = (exact[j].max() - exact[j].min()).item<double>();
      const double error = (computed[j] - exact[j]).abs().max().item<double>();
      EXPECT_LE(error, range / 30 * (1 + 1e-5)) << j;
      EXPECT_GT(error, 0.0) << j;
    }
    engine.release_model();
  });
  run_world(1, [&](Communicator& comm) {
    ShardedRank rank(comm, small_gpt("fp32", "fp32"));
    EXPECT_FALSE(rank.engine->gather_computed_model());
    for (const auto& p : rank.task->model().parameters()) EXPECT_EQ(p.numel(), 0);
  });
}

TEST(Sharded, SettingsItCannotRunAreRefused) {
  auto config = small_gpt("intsgd", "fp32");
  EXPECT_THROW(validate(config), InvalidArgument);  // needs optimizer feedback
  config = small_gpt("fp32", "fp32");
  config.buckets = "mergecomp";
  EXPECT_THROW(validate(config), InvalidArgument);
  config = small_gpt("fp32", "minmax:bits=8");
  config.engine = "data-parallel";
  EXPECT_THROW(validate(config), InvalidArgument);  // no weights to send
  config.engine = "fsdp";
  EXPECT_THROW(validate(config), InvalidArgument);
}

}  // namespace
}  // namespace qccl::engines
