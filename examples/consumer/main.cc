// A program outside qccl's tree that depends on the installed library: a
// Global-QSGD 8-bit allreduce (mean) of a gradient-sized vector on every rank
// of an MPI job, checked against the exact mean and the codec's error bound.
// Exits 0 only if every rank's result is within the bound.
// Run: mpirun -np 2 consumer
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "qccl/codecs/registry/codec_registry.h"
#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/common/errors.h"
#include "qccl/transport/mpi_transport.h"

int main(int argc, char** argv) {
  qccl::MpiRuntime mpi(&argc, &argv);
  auto transport = mpi.world_transport();
  qccl::CommunicatorOptions comm_options;
  comm_options.timeout = std::chrono::seconds(60);
  qccl::Communicator comm(*transport, comm_options);
  const int n = comm.size();
  const int rank = comm.rank();

  // Rank r holds (r + 1) * v; the mean over ranks is (n + 1) / 2 * v.
  const std::size_t count = std::size_t{1} << 18;
  std::vector<float> grad(count);
  std::vector<double> exact(count);
  double inf_norm = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const double v = std::sin(0.001 * static_cast<double>(i));
    grad[i] = static_cast<float>((rank + 1) * v);
    exact[i] = (n + 1) / 2.0 * v;
    inf_norm = std::max(inf_norm, std::abs(n * v));
  }

  auto codec = qccl::make_codec("global-qsgd:bits=8", {.seed = 1, .bucket = 0});
  codec->allreduce_mean(comm, grad);

  const double bound = codec->error_bound(inf_norm, n, qccl::Algorithm::ring,
                                          qccl::CodecOperation::allreduce_mean);
  double worst = 0;
  for (std::size_t i = 0; i < count; ++i) worst = std::max(worst, std::abs(grad[i] - exact[i]));
  // (The bound is a worst case, one quantization level; 1e-6 of the norm
  // covers the float rounding of the result itself.)
  bool ok = std::isfinite(bound) && bound > 0 && worst <= bound + 1e-6 * inf_norm;

  // qccl's exceptions cross the library boundary with their types.
  try {
    qccl::make_codec("no-such-codec");
    ok = false;
  } catch (const qccl::InvalidArgument&) {
  }

  // Rank 0 speaks for all: the ranks that passed, counted.
  std::vector<float> passed{ok ? 1.0f : 0.0f};
  qccl::Fp32Sum sum;
  qccl::allreduce(comm, passed, sum);
  const bool all_ok = passed[0] == static_cast<float>(n);
  if (rank == 0) {
    std::printf("%s allreduce (mean) of %zu floats on %d ranks, %zu bytes on the wire per rank "
                "instead of %zu: largest error %.3g, bound %.3g: %s\n",
                codec->spec().c_str(), count, n, codec->wire_bytes(count), count * sizeof(float),
                worst, bound, all_ok ? "within the bound on every rank" : "WRONG");
  }
  return all_ok ? 0 : 1;
}
