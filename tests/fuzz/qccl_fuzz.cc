// qccl_fuzz: the codecs' decoders, reductions and state loads under random
// mutations (fuzzer.h). A bounded run is part of the test suite; a longer
// one under AddressSanitizer and UndefinedBehaviorSanitizer is
// `scripts/fuzz --seconds 600` (docs/codecs.md, Robustness).
//
//   qccl_fuzz [--seconds S] [--iterations N] [--seed N] [--corpus DIR]
//             [--failures DIR]
//   qccl_fuzz --write-corpus DIR     one valid seed per codec and operation
//   qccl_fuzz --replay FILE          the calls of one recorded input
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "fuzzer.h"

namespace {

int usage() {
  std::cerr << "usage: qccl_fuzz [--seconds S] [--iterations N] [--seed N] [--corpus DIR] "
               "[--failures DIR] | --write-corpus DIR | --replay FILE\n";
  return 2;
}

int report(const qccl::fuzz::FuzzReport& r, const qccl::fuzz::FuzzOptions& options) {
  std::cout << "qccl_fuzz seed " << options.seed << ": " << r.targets << " reduction and "
            << r.state_targets << " state targets, " << r.corpus_entries
            << " corpus entries replayed, " << r.iterations << " mutated inputs, " << r.calls
            << " calls, " << r.rejected << " rejected as corrupt or invalid\n";
  if (r.failure.empty()) return 0;
  std::cout << "FAILURE: " << r.failure << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  qccl::fuzz::FuzzOptions options;
  std::string write_to, replay;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return usage();
    const std::string value = argv[++i];
    if (arg == "--seconds") options.seconds = std::stod(value);
    else if (arg == "--iterations") options.iterations = std::stoull(value);
    else if (arg == "--seed") options.seed = std::stoull(value);
    else if (arg == "--corpus") options.corpus = value;
    else if (arg == "--failures") options.failures = value;
    else if (arg == "--write-corpus") write_to = value;
    else if (arg == "--replay") replay = value;
    else return usage();
  }
  if (const auto missing = qccl::fuzz::uncovered_codecs(); !missing.empty()) {
    std::cout << "FAILURE: no fuzz target covers codec " << missing.front()
              << "; add its spec to tests/fuzz/fuzz_targets.cc\n";
    return 1;
  }
  if (options.seconds <= 0 && options.iterations == 0) options.iterations = 1000;
  qccl::fuzz::Fuzzer fuzzer(options);
  if (!write_to.empty()) {
    fuzzer.write_corpus(write_to);
    std::cout << "qccl_fuzz: corpus written to " << write_to << "\n";
    return 0;
  }
  if (!replay.empty()) {
    const auto entry = qccl::fuzz::read_entry(replay);
    if (!entry) {
      std::cerr << replay << " is not a qccl_fuzz entry\n";
      return 2;
    }
    return report(fuzzer.replay(*entry), options);
  }
  return report(fuzzer.run(), options);
}
