#include "fuzz_targets.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <random>
#include <set>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/communicator.h"
#include "qccl/common/errors.h"
#include "qccl/transport/local_transport.h"

namespace qccl::fuzz {
namespace {

// Every registry row, and the parameters that change a wire format.
const char* const kSpecs[] = {
    "fp32", "fp16", "global-qsgd", "global-qsgd:bits=4", "global-qsgd:dither=exp",
    "global-qsgd:norm=2", "qsgd", "qsgd:bits=4,bucket=128", "qsgd:norm=inf,bucket=128",
    "terngrad", "terngrad:wire=2bit", "terngrad:clip=2.5", "natural", "intsgd",
    "intsgd:wire=int32", "intsgd:wire=int64,round=deterministic", "intsgd-heuristic",
    "intsgd-heuristic:wire=int32", "intdiana", "intdiana:wire=int64", "topk:ef=off", "topk",
    "randk", "randk:scale=unbiased,ef=off", "dgc", "signsgd", "signum", "scaled-sign",
    "ef-signsgd", "onebit-quantizer", "onebit", "powersgd:min_rate=0", "ef(global-qsgd:bits=4)",
    "ef(fp16)", "qgenx", "qgenx:bits=4,levels=qada,coding=huffman,norm=2,bucket=128",
    "qgenx:bits=3,coding=elias,bucket=0", "minmax", "minmax:bits=4,bucket=128,rounding=shift",
    "minmax:bits=3,bucket=0,rounding=dither,levels=uniform", "minmax:bits=5,levels=learned,refit=1"};

const int kRankCounts[] = {1, 2, 3, 7, 20, 130};

// Two tensors, a matrix and a vector, 512 elements: a multiple of every
// granularity but QSGD's default bucket (which then spans the vector).
const std::vector<std::string> kNames{"w", "b"};
const std::vector<std::vector<std::int64_t>> kShapes{{16, 24}, {128}};
constexpr std::size_t kLength = 512;

// Gradient-like values of a few scales, with zeros, and now and then
// values near fp32's largest.
std::vector<float> random_input(std::size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> normal;
  const float scale = std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);
  const bool huge = rng() % 8 == 0;
  std::vector<float> x(n);
  for (float& v : x) {
    v = rng() % 10 == 0 ? 0.0f : normal(rng) * scale;
    if (huge && rng() % 4 == 0) v = (rng() % 2 ? 1 : -1) * 3e38f;
  }
  return x;
}

// The setup a step of `operation` on rank `rank` of `ranks` would have.
void set_up(ReductionTarget& t, CodecOperation operation, int ranks, int rank,
            std::mt19937_64& rng) {
  StepSetup& s = t.setup;
  s.operation = operation;
  s.algorithm = rng() % 2 ? Algorithm::ring : Algorithm::halving_doubling;
  s.ranks = ranks;
  s.rank = rank;
  s.summed = operation == CodecOperation::allgather ? 1 : ranks;
  s.step = rng() % 5;
  if (operation == CodecOperation::allgather) {
    const std::size_t shard = 8 * (1 + rng() % 16);
    for (int q = 0; q < ranks; ++q) {
      t.pieces.push_back({static_cast<std::size_t>(q) * shard, shard});
    }
    t.input = random_input(shard, rng);
    t.encodable = t.pieces[static_cast<std::size_t>(rank)];
  } else {
    t.input = random_input(kLength, rng);
    if (operation == CodecOperation::reduce_scatter_mean) {
      t.pieces = t.codec->reduce_scatter_blocks(kLength, ranks);
    }
    t.encodable = {0, kLength};
  }
  s.input = t.input;
  s.input_length = t.input.size();
  s.pieces = t.pieces;
  s.norm = local_norm(t.input, t.codec->norm_kind());
}

// Saved states are per element: a smaller layout keeps them (and their
// corpus entries) small.
const std::vector<std::vector<std::int64_t>> kStateShapes{{4, 6}, {8}};
constexpr std::size_t kStateLength = 32;

std::unique_ptr<Codec> make_with_layout(const std::string& spec, std::uint64_t seed,
                                        const std::vector<std::vector<std::int64_t>>& shapes) {
  auto codec = make_codec(spec, {.seed = seed, .bucket = 1});
  codec->set_layout(TensorLayout::of_shapes(kNames, shapes));
  return codec;
}

// One target, or null where the codec refuses the setup (an int8 wire on
// 130 ranks, an operation it lacks).
std::unique_ptr<ReductionTarget> make_target(const std::string& spec, CodecOperation operation,
                                             int ranks, int rank, std::mt19937_64& rng) {
  auto t = std::make_unique<ReductionTarget>();
  t->codec = make_with_layout(spec, rng(), kShapes);
  if (!t->codec->supports(operation)) return nullptr;
  if (t->codec->step_feedback() != nullptr) {  // an integer step, not the exact first one
    std::vector<float> update = random_input(kLength, rng);
    for (float& u : update) u = std::isfinite(u) ? u * 1e-3f : 0.0f;
    t->codec->step_feedback()->observe_step(0.1, update);
  }
  set_up(*t, operation, ranks, rank, rng);
  try {
    t->reduction = t->codec->encoding_for(t->setup);
  } catch (const InvalidArgument&) {
    return nullptr;
  }
  if (!t->reduction) return nullptr;  // all-zero input: nothing would move
  t->granularity = t->reduction->granularity();
  t->name = spec + " " + std::string(to_string(operation)) + " n" + std::to_string(ranks) +
            " r" + std::to_string(rank);
  t->codec_dir = directory_name(spec);
  return t;
}

}  // namespace

std::string directory_name(const std::string& spec) {
  std::string name;
  for (char c : spec) {
    name += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  }
  return name;
}

std::vector<std::unique_ptr<ReductionTarget>> reduction_targets(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::unique_ptr<ReductionTarget>> targets;
  for (const char* spec : kSpecs) {
    for (CodecOperation operation : {CodecOperation::allreduce_mean,
                                     CodecOperation::reduce_scatter_mean,
                                     CodecOperation::allgather}) {
      for (int ranks : kRankCounts) {
        for (int rank : {0, ranks - 1}) {
          if (rank == ranks - 1 && ranks == 1) continue;
          auto t = make_target(spec, operation, ranks, rank, rng);
          if (t) targets.push_back(std::move(t));
        }
      }
    }
  }
  return targets;
}

std::unique_ptr<Codec> StateTarget::fresh() const {
  return make_with_layout(spec, 1, kStateShapes);
}

std::vector<StateTarget> state_targets(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<StateTarget> targets;
  for (const char* spec : kSpecs) {
    auto codec = make_with_layout(spec, 1, kStateShapes);
    if (!codec->supports(CodecOperation::allreduce_mean)) continue;
    run_in_process(1, [&](Transport& transport) {
      Communicator comm(transport);
      std::normal_distribution<float> normal;
      for (int step = 0; step < 2; ++step) {
        std::vector<float> data(kStateLength);
        for (float& v : data) v = normal(rng);
        codec->allreduce_mean(comm, data);
        feed_sgd_step(*codec, data, 0.1);
      }
    });
    StateTarget t;
    t.spec = spec;
    t.name = spec;
    t.codec_dir = directory_name(spec);
    const auto saved = codec->save_state();
    t.saved.assign(saved.begin(), saved.end());
    if (!t.saved.empty()) targets.push_back(std::move(t));
  }
  return targets;
}

std::vector<std::string> uncovered_codecs() {
  std::set<std::string> covered;
  for (const char* spec : kSpecs) {
    std::string name(spec);
    name = name.substr(0, name.find_first_of(":("));
    covered.insert(name);
  }
  std::vector<std::string> missing;
  for (const auto& [name, description] : codec_catalog()) {
    if (!covered.count(name)) missing.push_back(name);
  }
  return missing;
}

}  // namespace qccl::fuzz
