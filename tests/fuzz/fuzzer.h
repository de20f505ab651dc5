// A seeded random-mutation fuzzer for the codecs' reductions and saved
// states. Each iteration takes a target (fuzz_targets.h), a valid chunk —
// freshly encoded, or a corpus entry — mutates it (mutations.h) and feeds
// it to decode, decode_contribution and reduce (as the incoming chunk, and
// a valid incoming chunk into a mutated accumulated one), then decodes what
// reduce left; or mutates a saved state and loads it into a fresh codec.
// Chunks sit where a collective's buffers would put them: at the start, or
// after another slot, at whatever alignment that leaves.
// The contract (reduction.h, codec.h) allows a CommError or an
// InvalidArgument; any other exception is a failure, and so is a crash or a
// sanitizer report, which end the process. Runs are reproducible from the
// seed: the same seed and iteration count redo the same calls.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "corpus_files.h"
#include "fuzz_targets.h"

namespace qccl::fuzz {

struct FuzzOptions {
  std::uint64_t seed = 1;
  double seconds = 0;            // stop after this long (0: no time limit)
  std::uint64_t iterations = 0;  // stop after this many (0: no count limit)
  std::filesystem::path corpus;  // replayed first and mutated; may be empty
  std::filesystem::path failures = ".";  // where a failing input is written
};

struct FuzzReport {
  std::uint64_t targets = 0, state_targets = 0;
  std::uint64_t iterations = 0, calls = 0, rejected = 0, corpus_entries = 0;
  std::string failure;  // empty: none
};

class Fuzzer {
 public:
  explicit Fuzzer(FuzzOptions options);

  // Replays the corpus, then mutates until the time or iteration limit;
  // stops at the first failure.
  FuzzReport run();
  // One valid chunk per codec and operation (3 ranks, rank 0) and one saved
  // state per codec that keeps one, under `directory`.
  void write_corpus(const std::filesystem::path& directory) const;
  // The calls of one entry (a corpus file or a recorded failure), unmutated.
  FuzzReport replay(const CorpusEntry& entry);

 private:
  struct Failure {
    std::string message;
  };
  template <class Call>
  void call(const std::string& what, Call&& body);
  Bytes encode(ReductionTarget& t, std::size_t first, std::size_t count) const;
  void pick_chunk(const ReductionTarget& t, std::size_t& first, std::size_t& count);
  std::size_t chunk_offset(const ReductionTarget& t);
  static std::span<std::byte> place(Bytes& buffer, const Bytes& bytes, std::size_t offset,
                                    std::size_t capacity);
  void exercise(ReductionTarget& t, std::size_t first, std::size_t count, const Bytes& incoming,
                const std::string& mutation);
  void exercise_state(const StateTarget& t, const Bytes& state, const std::string& mutation);
  void iterate();
  void replay_entry(const CorpusEntry& entry);
  void record(const std::string& target, std::size_t first, std::size_t count, const Bytes& bytes,
              const std::string& message);

  FuzzOptions options_;
  std::mt19937_64 rng_;
  std::vector<std::unique_ptr<ReductionTarget>> targets_;
  std::vector<StateTarget> states_;
  std::map<std::string, std::vector<CorpusEntry>> corpus_;  // by target name
  FuzzReport report_;
  bool replaying_ = false;  // a replayed input is not written again
};

}  // namespace qccl::fuzz
