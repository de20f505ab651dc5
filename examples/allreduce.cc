// docs/api.md's first example: an in-place ring allreduce of a gradient-sized
// vector on every rank of an MPI job. Run: scripts/mpirun -np 4 build/examples/allreduce_example
#include <cstdio>
#include <vector>

#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/transport/mpi_transport.h"

int main(int argc, char** argv) {
  qccl::MpiRuntime mpi(&argc, &argv);
  auto transport = mpi.world_transport();
  qccl::CommunicatorOptions comm_options;
  comm_options.timeout = std::chrono::seconds(60);  // bound on every wait
  qccl::Communicator comm(*transport, comm_options);
  qccl::Fp32Sum sum;  // a codec's Reduction plugs in here
  std::vector<float> grad(1 << 20, 1.0f);
  qccl::CollectiveOptions options;
  options.algorithm = qccl::Algorithm::ring;  // or halving_doubling, native
  qccl::allreduce(comm, grad, sum, options);
  const bool ok = grad.front() == static_cast<float>(comm.size()) &&
                  grad.back() == static_cast<float>(comm.size());
  if (comm.rank() == 0) {
    std::printf("allreduce of %zu floats over %d ranks: %s\n", grad.size(), comm.size(),
                ok ? "every element equals the rank count" : "WRONG");
  }
  return ok ? 0 : 1;
}
