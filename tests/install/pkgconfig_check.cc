// Built by tests/install/install_test.sh with nothing but
// `pkg-config --cflags --libs qccl-core`: the core's headers and library
// from an install. Three in-process ranks allreduce a vector; each element
// must come out as the rank count. Exits 0 if it does.
#include <cstdio>
#include <vector>

#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/communicator.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/transport/local_transport.h"

int main() {
  constexpr int kRanks = 3;
  std::vector<float> results(kRanks);
  qccl::run_in_process(kRanks, [&](qccl::Transport& transport) {
    qccl::Communicator comm(transport);
    std::vector<float> data(1000, 1.0f);
    qccl::Fp32Sum sum;
    qccl::allreduce(comm, data, sum);
    results[comm.rank()] = data.back();
  });
  for (const float r : results) {
    if (r != static_cast<float>(kRanks)) {
      std::printf("allreduce over %d in-process ranks gave %g, not %d\n", kRanks, r, kRanks);
      return 1;
    }
  }
  std::printf("allreduce over %d in-process ranks: every element equals the rank count\n", kRanks);
  return 0;
}
