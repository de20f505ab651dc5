// Microbenchmarks of the collectives' building blocks, each next to memcpy of
// the same bytes so results are read as ratios on a noisy machine:
//   build/bench/qccl_microbench --benchmark_filter=Fp32|Memcpy
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/transport/local_transport.h"

namespace {

// memcpy of n floats: the reference throughput.
void BM_Memcpy(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<float> src(n, 1.0f), dst(n);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), n * sizeof(float));
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
}

// The hop reduction of uncompressed allreduce: acc += incoming.
void BM_Fp32SumReduce(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<float> acc(n, 1.0f), in(n, 2.0f);
  qccl::Fp32Sum sum;
  const qccl::ReduceContext context{0, n, 0, 0};
  for (auto _ : state) {
    sum.reduce(std::as_bytes(std::span(in)), std::as_writable_bytes(std::span(acc)),
               n * sizeof(float), context);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
}

// Whole allreduce on the in-process transport (threads share the cores, so
// this measures the collectives' own overhead, not a network). Rank 0 times
// kCalls back-to-back allreduces after a barrier; thread start-up is excluded.
void BM_InProcessAllreduce(benchmark::State& state) {
  constexpr int kCalls = 10;
  const auto n = static_cast<std::size_t>(state.range(0));
  const int ranks = static_cast<int>(state.range(1));
  const auto algorithm = static_cast<qccl::Algorithm>(state.range(2));
  for (auto _ : state) {
    double seconds = 0;
    qccl::run_in_process(ranks, [&](qccl::Transport& transport) {
      qccl::Communicator comm(transport);
      qccl::Fp32Sum sum;
      std::vector<float> data(n, 1.0f);
      qccl::CollectiveOptions options;
      options.algorithm = algorithm;
      qccl::allreduce(comm, data, sum, options);  // warm-up: scratch buffers, pages
      transport.barrier(comm.options().timeout);
      const auto start = qccl::Clock::now();
      for (int i = 0; i < kCalls; ++i) qccl::allreduce(comm, data, sum, options);
      if (transport.rank() == 0) {
        seconds = std::chrono::duration<double>(qccl::Clock::now() - start).count();
      }
    });
    state.SetIterationTime(seconds / kCalls);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
}

}  // namespace

BENCHMARK(BM_Memcpy)->RangeMultiplier(16)->Range(1 << 12, 1 << 24);
BENCHMARK(BM_Fp32SumReduce)->RangeMultiplier(16)->Range(1 << 12, 1 << 24);
BENCHMARK(BM_InProcessAllreduce)
    ->ArgsProduct({{1 << 16, 1 << 22}, {2, 4}, {static_cast<int>(qccl::Algorithm::ring),
                                                 static_cast<int>(qccl::Algorithm::halving_doubling)}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
