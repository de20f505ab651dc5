#include "stream_checks.h"

#include <gtest/gtest.h>

#include <future>
#include <vector>

#include "patterns.h"
#include "qccl/collectives/allgather.h"
#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/collectives/reduce_scatter.h"
#include "qccl/collectives/stream.h"

namespace qccl::test {

void check_two_streams_in_flight(Communicator& comm, std::size_t shard, std::size_t vector,
                                 Timeout timeout) {
  const int n = comm.size(), r = comm.rank();
  Stream weights(comm, "weights");
  Stream grads(comm, "grads");
  const auto mine_shard = make_vector(shard, [&](std::size_t i) { return pattern(r, i); });
  std::vector<float> gathered(shard * static_cast<std::size_t>(n));
  const auto input = make_vector(vector, [&](std::size_t i) { return pattern(r, i + 7); });
  const Range mine = reduce_scatter_blocks(vector, n, 1)[static_cast<std::size_t>(r)];
  std::vector<float> block(mine.count);
  Fp32Sum sum;
  std::promise<void> grads_done;
  auto grads_finished = grads_done.get_future().share();
  auto submit_weights = [&] {
    return weights.submit("layer 2 weights", [&, grads_finished](Communicator& c) {
      EXPECT_EQ(grads_finished.wait_for(timeout), std::future_status::ready);
      allgather(c, mine_shard, gathered);
    });
  };
  auto submit_grads = [&] {
    return grads.submit("layer 3 gradients", [&](Communicator& c) {
      reduce_scatter(c, input, block, sum);
      grads_done.set_value();
    });
  };
  Work w, g;
  if (r % 2 == 0) {
    w = submit_weights();
    g = submit_grads();
  } else {
    g = submit_grads();
    w = submit_weights();
  }
  // The caller's own communicator is free while both are in flight.
  std::vector<float> ones(5, 1.0f);
  Fp32Sum caller_sum;  // not the one the grads stream is using
  allreduce(comm, ones, caller_sum);
  EXPECT_EQ(ones, std::vector<float>(5, static_cast<float>(n)));
  w.wait(timeout);
  g.wait(timeout);
  for (std::size_t i = 0; i < gathered.size(); ++i) {
    ASSERT_EQ(gathered[i], pattern(static_cast<int>(i / shard), i % shard));
  }
  for (std::size_t i = 0; i < block.size(); ++i) {
    ASSERT_EQ(block[i], pattern_sum(n, mine.first + i + 7));
  }
}

}  // namespace qccl::test
