// Outputs of a run that would write over one another: the log and the
// summary given the same path (the summary replaces the log at the end), a
// summary or log written where a checkpoint keeps its manifest, lock or
// step folders (the next resume finds no checkpoint, or the checkpoint
// deletes the log). Refused before training, whatever the spelling of the
// paths (relative or absolute, through symbolic links, hard links).
//
// Torch-free.
#pragma once

#include <vector>

#include "qccl/training/train_config.h"

namespace qccl::engines {

// InvalidArgument naming both outputs and the path when two of `outputs`
// are the same file or directory, or when one lies inside a checkpoint
// directory among them at a name the checkpoint writes or removes
// (checkpoint_manifest.h's is_checkpoint_entry). Devices and pipes
// (/dev/stdout) may be shared: writes to them add up instead of replacing.
void check_outputs_apart(const std::vector<OutputPath>& outputs);

}  // namespace qccl::engines
