// The API page's streams example: a sharded step's two exchanges in flight
// side by side. On stream "weights" every rank allgathers its shard of the
// weights with Global-QSGD 8-bit; on stream "gradients", at the same time,
// the gradients are reduce-scattered to their owners with 4-bit.
// Run: scripts/mpirun -np 4 build/examples/streams_example
#include <cmath>
#include <cstdio>
#include <vector>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/collectives/stream.h"
#include "qccl/transport/mpi_transport.h"

int main(int argc, char** argv) {
  qccl::MpiRuntime mpi(&argc, &argv);
  auto transport = mpi.world_transport();
  qccl::Communicator comm(*transport);
  const int n = comm.size();
  const int rank = comm.rank();

  // Streams are collective: every rank creates them in the same order.
  qccl::Stream weights_stream(comm, "weights");
  qccl::Stream gradients_stream(comm, "gradients");
  auto weights_codec = qccl::make_codec("global-qsgd:bits=8", {.seed = 7, .bucket = 0});
  auto gradients_codec = qccl::make_codec("global-qsgd:bits=4", {.seed = 7, .bucket = 1});

  const std::size_t shard = 1000;
  std::vector<float> my_weights(shard, 0.5f + static_cast<float>(rank));
  std::vector<float> weights(shard * n);
  std::vector<float> gradients(shard * n, static_cast<float>(rank + 1));
  const auto blocks = gradients_codec->reduce_scatter_blocks(gradients.size(), n);
  std::vector<float> my_gradient(blocks[rank].count);

  // Both operations run on the streams' threads; the caller is free.
  qccl::Work gathered = weights_stream.submit("allgather weights", [&](qccl::Communicator& c) {
    weights_codec->allgather(c, my_weights, weights);
  });
  qccl::Work reduced =
      gradients_stream.submit("reduce-scatter gradients", [&](qccl::Communicator& c) {
        gradients_codec->reduce_scatter_mean(c, gradients, my_gradient);
      });
  gathered.wait(std::chrono::seconds(60));  // rethrows the operation's failure
  reduced.wait(std::chrono::seconds(60));

  // Each lossy result lies within its codec's error bound of the exact one.
  const double weights_bound = weights_codec->error_bound(
      n - 0.5, n, qccl::Algorithm::ring, qccl::CodecOperation::allgather);
  const double gradients_bound = gradients_codec->error_bound(
      n, n, qccl::Algorithm::ring, qccl::CodecOperation::reduce_scatter_mean);
  bool ok = true;
  for (int r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < shard; ++i) {
      ok = ok && std::abs(weights[r * shard + i] - (0.5 + r)) <= weights_bound;
    }
  }
  for (const float g : my_gradient) ok = ok && std::abs(g - (n + 1) / 2.0) <= gradients_bound;
  // Rank 0 speaks for all: the ranks that passed, counted.
  std::vector<float> passed{ok ? 1.0f : 0.0f};
  qccl::Fp32Sum sum;
  qccl::allreduce(comm, passed, sum);
  ok = passed[0] == static_cast<float>(n);
  if (rank == 0) {
    std::printf("allgather of %zu weights and reduce-scatter of %zu gradients on %d ranks, "
                "side by side: %s\n",
                weights.size(), gradients.size(), n,
                ok ? "both within their error bounds" : "WRONG");
  }
  return ok ? 0 : 1;
}
