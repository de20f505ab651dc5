// `qccl experiment qsdp`: QSDP §6 (Table 1, Table 3 and Figure 4's
// speedups) at this machine's scale. A small GPT (`--model gpt`) on the
// text of Debian's fortunes is trained by the sharded engine once per
// variant and seed (qsdp_variants.h: baseline, fp32, W8G8, W8G8-nobucket,
// WxG4 and W4G32 with uniform and learned levels), the runs of one seed
// with the same seed, data order and settings, only the weights' and
// gradients' codecs differing. Each variant gives, per seed and as mean and
// spread, its final test perplexity of the fp32 master weights and of the
// weights it computed with (Q^w), both relative to the baseline's of the
// same seed (Tables 1 and 3), its step time and how the training thread
// spent it, the bytes rank 0 sent per step, its speedup against
// uncompressed sharded training (`fp32`, the reference of §6's "up to
// 2.2×") and against the baseline, and the peak memory of the run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/training/train_config.h"
#include "qccl/experiments/qsdp/qsdp_results.h"
#include "qccl/experiments/qsdp/qsdp_variants.h"

namespace qccl::tools {

// The default length of a run: all ten variants at the defaults below take
// a few minutes on 4 in-process ranks and 2 cores (measured: 4 min 55 s on
// a 2-core AMD EPYC while another build shared it; 200 steps took 7 min).
inline constexpr std::size_t kQsdpDefaultSteps = 150;

// The settings every variant trains with unless the command line changes
// them: gpt on fortunes, 2 blocks of width 128 over 64 characters, batch
// 16 per rank, AdamW with betas (0.9, 0.95) as QSDP's Table 4, at lr 0.003
// (QSDP §6 keeps the baseline's hyperparameters for every variant). Learned
// levels go to layers of at least 10^5 values; at width 128 the largest
// layers (`up`, `down`: 4·128² = 65 536) are smaller, so the learned
// variants need --hidden 160 or more to learn any (at 256: qkv, up, down).
engines::TrainConfig qsdp_train_defaults();

struct QsdpExperimentConfig {
  // model, engine, codecs, epochs and steps per epoch are set per variant;
  // everything else is used as it is.
  engines::TrainConfig train = qsdp_train_defaults();
  std::vector<std::string> variants;  // names; empty: every variant
  std::size_t steps = kQsdpDefaultSteps;
  std::uint64_t refit = 0;            // learned levels' first fit; 0: default_qsdp_refit(steps)
  std::vector<std::uint64_t> seeds;   // every variant once per seed; empty: train.seed
  std::string output;                 // directory for qsdp.{csv,json,svg} (rank 0); empty: none
};

// Checks the settings and the variant names before any rank starts; throws
// InvalidArgument naming the option and what is valid.
void validate(const QsdpExperimentConfig& config);

// The first fit `config` runs with: its own, or default_qsdp_refit.
std::uint64_t refit_of(const QsdpExperimentConfig& config);
// The seeds `config` runs: its seeds, or train.seed alone.
std::vector<std::uint64_t> seeds_of(const QsdpExperimentConfig& config);

// The variants' training thread step in milliseconds (QsdpRow::step_ms).
double step_milliseconds(const engines::StepSplit& split);

// Fills each row's step_ms, relative perplexities (per seed against the
// baseline's of the same seed, and their mean) and speedups from the
// summaries and per-seed perplexities (the references are the rows named
// baseline and fp32).
void compare_rows(std::vector<QsdpRow>& rows);

// Trains every variant on every rank of `comm` (all ranks with the same
// settings); rank 0 writes the files into config.output and gets the full
// report. A rank with other settings fails every rank before the first run.
QsdpReport run_qsdp_experiment(Communicator& comm, const QsdpExperimentConfig& config);

}  // namespace qccl::tools
