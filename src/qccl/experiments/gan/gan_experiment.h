// `qccl experiment qgenx-gan`: Q-GenX §5 / Appendix H on this machine —
// WGAN-GP on Fashion-MNIST trained data-parallel with ExtraAdam, each
// oracle's gradients exchanged through one codec per run (fp32 against
// uniform 8-bit and 4-bit quantization with buckets of 1024), scored by a
// Fréchet distance on features of a classifier qccl trains itself
// (experiments/gan/feature_classifier.h: not Inception, so not FID), and timed
// per step as the trainer splits it.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "qccl/collectives/communicator.h"
#include "qccl/experiments/gan/gan_training.h"

namespace qccl::tools {

// Q-GenX §5's settings: fp32 against uniform 8-bit and 4-bit quantization
// (Definition 1 with uniform levels and the ∞-norm) per bucket of 1024,
// symbols in fixed width.
inline const std::vector<std::string> kGanDefaultCodecs{
    "fp32", "qgenx:bits=8,levels=uniform,norm=inf,bucket=1024,coding=fixed",
    "qgenx:bits=4,levels=uniform,norm=inf,bucket=1024,coding=fixed"};

struct GanExperimentConfig {
  engines::GanConfig gan;            // its codec is replaced by each of `codecs`
  std::vector<std::string> codecs = kGanDefaultCodecs;
  std::string output;                // directory for the table and grids (rank 0); empty: none
};

struct GanExperimentReport {
  std::vector<engines::GanResult> runs;  // one per codec, in order
  std::vector<std::string> files;        // written by rank 0
};

// Runs every codec on every rank of `comm`; rank 0 writes
// OUTPUT/qgenx-gan.{csv,json} and OUTPUT/qgenx-gan-CODEC.png. The Fréchet
// classifier is cached in gan.cache_dir (default OUTPUT/cache).
GanExperimentReport run_gan_experiment(Communicator& comm, const GanExperimentConfig& config);
void print_gan_report(std::ostream& out, const GanExperimentReport& report);

// A codec spec as a file-name part: "qsgd:bits=8,bucket=1024" → "qsgd-bits-8-bucket-1024".
std::string file_part(const std::string& spec);

}  // namespace qccl::tools
