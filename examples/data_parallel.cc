// docs/api.md's training example: your own libtorch model trained data-parallel
// with a compressed gradient exchange. Each rank fits y = 3x − 1 on its own
// samples; the engine averages the gradients through Global-QSGD
// exponential 8-bit. Run: scripts/mpirun -np 4 build/examples/data_parallel_example
#include <torch/torch.h>

#include <cstdio>

#include "qccl/common/allocator_settings.h"
#include "qccl/engines/data_parallel.h"
#include "qccl/engines/optimizers.h"
#include "qccl/transport/mpi_transport.h"

int main(int argc, char** argv) {
  qccl::keep_freed_memory_for_reuse();  // before anything allocates: steps reuse freed blocks
  qccl::MpiRuntime mpi(&argc, &argv);
  auto transport = mpi.world_transport();
  qccl::Communicator comm(*transport);
  torch::set_num_threads(1);

  torch::nn::Linear model(1, 1);
  std::vector<qccl::engines::NamedTensor> parameters;
  for (const auto& p : model->named_parameters()) parameters.emplace_back(p.key(), p.value());
  qccl::engines::EngineOptions options;
  options.codec = qccl::CodecSpec::parse("global-qsgd:bits=8,dither=exp");
  options.seed = 1;
  qccl::engines::DataParallelEngine engine(comm, parameters, options);
  engine.broadcast_from_root();  // every replica starts from rank 0's parameters

  // libtorch's SGD to the bit, without per-step temporaries (optimizers.h).
  qccl::engines::InPlaceSGD sgd(model->parameters(), torch::optim::SGDOptions(0.1));
  // This rank's data: a slice of [-1, 1] of its own.
  const auto x = torch::linspace(-1, 1, 64).view({4, 16}).select(0, comm.rank() % 4).view({16, 1});
  const auto y = 3 * x - 1;
  for (int step = 0; step < 200; ++step) {
    engine.begin_step();
    torch::mse_loss(model(x), y).backward();  // hooks hand buckets to the communication thread
    engine.finish_step();                     // waits; .grad now holds the mean over ranks
    engine.snapshot_parameters();             // codec feedback (IntSGD); no-op otherwise
    sgd.step();
    engine.observe_update(0.1);
  }
  if (comm.rank() == 0) {
    std::printf("fitted y = %.3f x %+.3f on %d ranks (%zu bucket(s), %.0f payload bytes per step)\n",
                model->weight.item<double>(), model->bias.item<double>(), comm.size(),
                engine.bucket_count(), engine.payload_bytes());
  }
}
