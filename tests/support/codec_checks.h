// Checks of a codec's three operations against the exact results, written
// against a Communicator so the same checks run in process and under mpirun.
#pragma once

#include <cstddef>
#include <string>

#include "qccl/codecs/codec.h"
#include "qccl/codecs/tensor_layout.h"
#include "qccl/collectives/communicator.h"

namespace qccl::test {

// Runs `spec` through `operation` on noise inputs of `count` elements per
// rank (per shard for allgather), twice (a codec that scales by the
// optimizer's history is exact on its first step and fed an SGD update in
// between), and expects of the second step:
// - every element within the codec's worst-case error of the exact mean
//   (or, for allgather, of the exact shard);
// - identical bytes on every rank that holds the same result (allreduce,
//   allgather);
// - a reduce-scatter block equal, bit for bit, to the same block of an
//   allreduce on the same step where both take the same path (the ring's
//   first phase; decode-and-sum codecs on any algorithm);
// - this rank's own contribution Q(x) consistent: its mean over ranks within
//   the error bound of the exact mean; for allgather, equal to this rank's
//   decoded shard as every rank received it.
// - every element of the result and of Q(x) finite.
// A codec that lacks the operation must refuse it, naming codec and
// operation, on every rank before anything moves. `value` gives rank r's
// input element i (null: noise(), values in (-1, 1)).
using InputValue = float (*)(int rank, std::size_t i);
void check_codec_operation(Communicator& comm, const std::string& spec,
                           CodecOperation operation, std::size_t count, Algorithm algorithm,
                           InputValue value = nullptr);

// fp32 through the three operations on small-integer inputs: the exact
// closed form, bit for bit.
void check_fp32_operations_exact(Communicator& comm, std::size_t count, Algorithm algorithm);

// Runs `steps` allreduce means of `spec` (seed 4) over a vector laid out as
// `layout`, on inputs that change every step and an SGD update fed back
// after each, and expects: every step's result bitwise identical on every
// rank; and a codec saved after `steps`/2 steps, loaded into a fresh
// instance and continued, ending with the uninterrupted run's result bit for
// bit. With `expect_state`, the saved state must not be empty.
void check_codec_resumes_exactly(Communicator& comm, const std::string& spec,
                                 const TensorLayout& layout, int steps = 6,
                                 bool expect_state = true);

}  // namespace qccl::test
