#include "collective_checks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "patterns.h"
#include "qccl/collectives/allgather.h"
#include "qccl/collectives/allreduce.h"
#include "qccl/collectives/broadcast.h"
#include "qccl/collectives/fp32_sum.h"
#include "qccl/collectives/reduce_scatter.h"
#include "sparse_test_reduction.h"

namespace qccl::test {
namespace {

CollectiveOptions options_for(const CollectiveCase& c) {
  CollectiveOptions o;
  o.algorithm = c.algorithm;
  o.chunk_bytes = c.chunk_bytes;
  o.between_hosts = c.between_hosts;
  o.host_part_bytes = c.host_part_bytes;
  return o;
}

// Number of elements that differ from expected(i), reported once.
template <typename F>
void expect_values(std::span<const float> got, F&& expected, std::string_view what, int rank) {
  std::size_t wrong = 0, first_wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != expected(i)) {
      if (wrong++ == 0) first_wrong = i;
    }
  }
  EXPECT_EQ(wrong, 0u) << what << " on rank " << rank << ": " << wrong << " of " << got.size()
                       << " elements wrong, first at " << first_wrong << " (got "
                       << (wrong ? got[first_wrong] : 0.0f) << ", expected "
                       << (wrong ? expected(first_wrong) : 0.0f) << ")";
}

}  // namespace

void expect_identical_across_ranks(Communicator& comm, std::span<const float> data) {
  std::vector<std::int64_t> h{bytes_hash(data), -bytes_hash(data)};
  allreduce_values<std::int64_t>(comm.transport(), h, ReduceOp::max, comm.options().timeout);
  EXPECT_EQ(h[0], -h[1]) << "ranks ended with different bytes (rank " << comm.rank() << ")";
}

void check_allreduce_fp32(Communicator& comm, const CollectiveCase& c) {
  const int n = comm.size(), r = comm.rank();
  Fp32Sum sum;
  auto input = make_vector(c.count, [&](std::size_t i) { return pattern(r, i); });
  std::vector<float> output(c.count, -1.0f);
  if (c.in_place) {
    allreduce(comm, input, sum, options_for(c));
    output = input;
  } else {
    const auto original = input;
    allreduce(comm, input, output, sum, options_for(c));
    EXPECT_EQ(input, original) << "out-of-place allreduce modified its input";
  }
  expect_values(output, [&](std::size_t i) { return pattern_sum(n, i); }, "allreduce", r);
  expect_identical_across_ranks(comm, output);
}

void check_allreduce_noise(Communicator& comm, const CollectiveCase& c) {
  const int n = comm.size(), r = comm.rank();
  Fp32Sum sum;
  auto data = make_vector(c.count, [&](std::size_t i) { return noise(r, i); });
  allreduce(comm, data, sum, options_for(c));
  std::size_t far = 0;
  for (std::size_t i = 0; i < c.count; ++i) {
    double exact = 0;
    for (int q = 0; q < n; ++q) exact += noise(q, i);
    // |inputs| <= 1: any summation order is within n * eps * sum|x| <= n^2 eps.
    if (std::abs(data[i] - exact) > n * n * 1.2e-7) ++far;
  }
  EXPECT_EQ(far, 0u) << "elements outside the rounding bound on rank " << r;
  expect_identical_across_ranks(comm, data);
}

void check_allreduce_sparse(Communicator& comm, const CollectiveCase& c) {
  const int n = comm.size(), r = comm.rank();
  SparseTestReduction sparse;
  auto input = make_vector(c.count, [&](std::size_t i) { return sparse_pattern(r, i); });
  std::vector<float> output(c.count, -1.0f);
  allreduce(comm, input, output, sparse, options_for(c));
  expect_values(output, [&](std::size_t i) { return sparse_pattern_sum(n, i); },
                "sparse allreduce", r);
  expect_identical_across_ranks(comm, output);
}

void check_reduce_scatter(Communicator& comm, const CollectiveCase& c) {
  const int n = comm.size(), r = comm.rank();
  Fp32Sum sum;
  const auto input = make_vector(c.count, [&](std::size_t i) { return pattern(r, i); });
  const auto blocks = reduce_scatter_blocks(c.count, n, 1);
  const Range mine = blocks[static_cast<std::size_t>(r)];
  std::vector<float> output(mine.count, -1.0f);
  reduce_scatter(comm, input, output, sum, options_for(c));
  expect_values(output, [&](std::size_t i) { return pattern_sum(n, mine.first + i); },
                "reduce-scatter", r);
  if (c.algorithm == Algorithm::native) return;  // MPI cannot run the test reduction
  // And through the size-changing reduction, with granularity 4.
  SparseTestReduction sparse;
  const auto sparse_input = make_vector(c.count, [&](std::size_t i) { return sparse_pattern(r, i); });
  const auto sparse_blocks = reduce_scatter_blocks(c.count, n, sparse.granularity());
  const Range sparse_mine = sparse_blocks[static_cast<std::size_t>(r)];
  std::vector<float> sparse_output(sparse_mine.count, -1.0f);
  reduce_scatter(comm, sparse_input, sparse_output, sparse, options_for(c));
  expect_values(sparse_output,
                [&](std::size_t i) { return sparse_pattern_sum(n, sparse_mine.first + i); },
                "sparse reduce-scatter", r);
}

void check_allgather(Communicator& comm, const CollectiveCase& c) {
  const int n = comm.size(), r = comm.rank();
  std::vector<float> output(c.count * static_cast<std::size_t>(n), -1.0f);
  auto mine = make_vector(c.count, [&](std::size_t i) { return pattern(r, i); });
  if (c.in_place) {
    std::copy(mine.begin(), mine.end(), output.begin() + static_cast<long>(c.count) * r);
    allgather(comm, std::span<const float>(output).subspan(c.count * static_cast<std::size_t>(r), c.count),
              output, options_for(c));
  } else {
    allgather(comm, mine, output, options_for(c));
  }
  expect_values(output, [&](std::size_t i) { return pattern(static_cast<int>(i / std::max<std::size_t>(c.count, 1)), i % std::max<std::size_t>(c.count, 1)); },
                "allgather", r);
}

void check_allgatherv(Communicator& comm, const CollectiveCase& c) {
  const int n = comm.size(), r = comm.rank();
  std::vector<std::size_t> counts(static_cast<std::size_t>(n));
  for (int q = 0; q < n; ++q) counts[static_cast<std::size_t>(q)] = c.count + 3 * static_cast<std::size_t>(q);
  EXPECT_EQ(allgather_counts(comm, counts[static_cast<std::size_t>(r)]), counts);
  std::vector<std::size_t> owner, index;
  for (int q = 0; q < n; ++q) {
    for (std::size_t i = 0; i < counts[static_cast<std::size_t>(q)]; ++i) {
      owner.push_back(static_cast<std::size_t>(q));
      index.push_back(i);
    }
  }
  const auto mine = make_vector(counts[static_cast<std::size_t>(r)], [&](std::size_t i) { return pattern(r, i); });
  std::vector<float> output(owner.size(), -1.0f);
  allgatherv(comm, mine, counts, output, options_for(c));
  expect_values(output, [&](std::size_t i) { return pattern(static_cast<int>(owner[i]), index[i]); },
                "allgatherv", r);
}

void check_broadcast(Communicator& comm, const CollectiveCase& c, int root) {
  const int r = comm.rank();
  auto data = make_vector(c.count, [&](std::size_t i) { return r == root ? pattern(root, i) : -99.0f; });
  broadcast(comm, data, root, options_for(c));
  expect_values(data, [&](std::size_t i) { return pattern(root, i); }, "broadcast", r);
}

}  // namespace qccl::test
