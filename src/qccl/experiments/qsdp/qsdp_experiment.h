// `qccl experiment qsdp`: QSDP §6 (Table 1, Table 3 and Figure 4's
// speedups) at this machine's scale. A small GPT (`--model gpt`) on the
// text of Debian's fortunes is trained by the sharded engine once per
// variant (qsdp_variants.h: baseline, fp32, W8G8, W8G8-nobucket, WxG4 with
// uniform and learned levels), every run with the same seed, data order and
// settings, only the weights' and gradients' codecs differing. Each variant
// gives its final test perplexity, that perplexity relative to the
// baseline's (Tables 1 and 3), its step time and how the training thread
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
// them: gpt on fortunes, 2 blocks of width 128 over 64 characters (a
// block's matrices hold 12·128² ≈ 2·10^5 values, over the 10^5 from which
// the sharded engine uses learned levels), batch 16 per rank, Adam at lr
// 0.003 (QSDP §6 keeps the baseline's hyperparameters for every variant).
engines::TrainConfig qsdp_train_defaults();

struct QsdpExperimentConfig {
  // model, engine, codecs, epochs and steps per epoch are set per variant;
  // everything else is used as it is.
  engines::TrainConfig train = qsdp_train_defaults();
  std::vector<std::string> variants;  // names; empty: every variant
  std::size_t steps = kQsdpDefaultSteps;
  std::uint64_t refit = 0;            // learned levels' refit period; 0: default_qsdp_refit(steps)
  std::string output;                 // directory for qsdp.{csv,json,svg} (rank 0); empty: none
};

// Checks the settings and the variant names before any rank starts; throws
// InvalidArgument naming the option and what is valid.
void validate(const QsdpExperimentConfig& config);

// The refit period `config` runs with: its own, or default_qsdp_refit.
std::uint64_t refit_of(const QsdpExperimentConfig& config);

// The variants' training thread step in milliseconds (QsdpRow::step_ms).
double step_milliseconds(const engines::StepSplit& split);

// Fills each row's step_ms, relative perplexity and speedups from the
// summaries (the references are the rows named baseline and fp32).
void compare_rows(std::vector<QsdpRow>& rows);

// Trains every variant on every rank of `comm` (all ranks with the same
// settings); rank 0 writes the files into config.output and gets the full
// report. A rank with other settings fails every rank before the first run.
QsdpReport run_qsdp_experiment(Communicator& comm, const QsdpExperimentConfig& config);

}  // namespace qccl::tools
