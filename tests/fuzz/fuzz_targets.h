// What the fuzzer drives: the reduction of every codec in the registry —
// the specs below cover each row and the parameters that change its wire
// format — for each operation the codec offers, on several rank counts and
// two ranks of each, built exactly as a codec step builds it
// (Codec::encoding_for) from a random input; and the saved state of every
// codec that keeps one, as load_state() reads it back.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "qccl/codecs/codec.h"
#include "mutations.h"

namespace qccl::fuzz {

struct ReductionTarget {
  std::string name;       // "qsgd:bits=4,bucket=128 allreduce mean n3 r2"
  std::string codec_dir;  // the codec's corpus directory
  std::unique_ptr<Codec> codec;
  std::vector<float> input;  // this rank's input: the vector, or its shard
  std::vector<Range> pieces;
  StepSetup setup;
  std::unique_ptr<Encoding> reduction;
  // The elements this rank's chunks may cover (its shard for an allgather)
  // in the collective's element space, and where `input` starts in it.
  Range encodable;
  std::size_t granularity = 1;
};

struct StateTarget {
  std::string name;       // the codec spec
  std::string codec_dir;
  Bytes saved;            // save_state() after two steps
  std::unique_ptr<Codec> fresh() const;  // the codec load_state() is given to
  std::string spec;
};

// Every reduction target, built from `seed`.
std::vector<std::unique_ptr<ReductionTarget>> reduction_targets(std::uint64_t seed);
// Every codec with a saved state, after two steps on one rank.
std::vector<StateTarget> state_targets(std::uint64_t seed);
// The registry's codec names no target covers (should be none).
std::vector<std::string> uncovered_codecs();

// A corpus directory name for a codec spec: letters, digits, '-', '_'.
std::string directory_name(const std::string& spec);

}  // namespace qccl::fuzz
