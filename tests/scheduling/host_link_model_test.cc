// The model of hosts of several ranks (host_link_model.h): each
// algorithm's terms against closed forms worked out by hand, the fit
// recovering known coefficients from synthetic measurements, and the
// choice of --algo auto in clear-cut cases.
#include <gtest/gtest.h>

#include "qccl/common/errors.h"
#include "qccl/scheduling/algorithm_choice.h"
#include "qccl/scheduling/host_link_model.h"

namespace qccl {
namespace {

const HostLinkParams kLinks{100e-6, 12.5e6, 5e-6, 2e9};
const CodecCost kCodec{4, 10e9, 0.2e-9};

// 4 hosts of 2 ranks, S = 1 MB, ρ = 4 (Ŝ = 250 kB).
TEST(HostLinkModelTest, HierarchicalInClosedForm) {
  const auto t = host_link_terms(Algorithm::hierarchical, {4, 2}, 1e6, 4);
  EXPECT_DOUBLE_EQ(t.network_steps, 6);                // 2(H−1)
  EXPECT_DOUBLE_EQ(t.card_bytes, 2.0 * 3 / 4 * 250e3);  // 2(H−1)/H·Ŝ: L slices of Ŝ/L
  EXPECT_DOUBLE_EQ(t.local_steps, 2);                  // 2(L−1)
  EXPECT_DOUBLE_EQ(t.local_bytes, 1e6);                // 2(L−1)/L·S, fp32
  EXPECT_DOUBLE_EQ(t.reduce_bytes, 3.0 / 4 * 1e6 / 2);  // (H−1)/H·S/L
  EXPECT_DOUBLE_EQ(t.codec_bytes, 5e5);                // S/L
  const double expected = 6 * 100e-6 + 375e3 / 12.5e6 + 2 * 5e-6 + 1e6 / 2e9 +
                          375e3 / 10e9 + 5e5 * 0.2e-9;
  EXPECT_DOUBLE_EQ(predict_host_link_seconds(t, kLinks, kCodec), expected);
  // Halving-doubling between 4 hosts: 2·log2 4 steps, the same bytes.
  const auto hd = host_link_terms(Algorithm::hierarchical, {4, 2}, 1e6, 4,
                                  Algorithm::halving_doubling);
  EXPECT_DOUBLE_EQ(hd.network_steps, 4);
  EXPECT_DOUBLE_EQ(hd.card_bytes, t.card_bytes);
  // One host: only the steps within it.
  const auto one = host_link_terms(Algorithm::hierarchical, {1, 4}, 1e6, 1);
  EXPECT_EQ(one.network_steps, 0);
  EXPECT_EQ(one.card_bytes, 0);
  EXPECT_DOUBLE_EQ(one.local_steps, 6);
  EXPECT_DOUBLE_EQ(one.local_bytes, 1.5e6);
}

TEST(HostLinkModelTest, FlatRingSharesNoCard) {
  // 8 ranks on 4 hosts: one rank per host boundary sends 2(n−1)/n·Ŝ.
  const auto t = host_link_terms(Algorithm::ring, {4, 2}, 1e6, 4);
  EXPECT_DOUBLE_EQ(t.network_steps, 14);
  EXPECT_DOUBLE_EQ(t.card_bytes, 2.0 * 7 / 8 * 250e3);
  EXPECT_EQ(t.local_steps, 0);
  EXPECT_DOUBLE_EQ(t.reduce_bytes, 7.0 / 8 * 1e6);
  EXPECT_DOUBLE_EQ(t.codec_bytes, 1e6);
  // One host: every hop within it.
  const auto one = host_link_terms(Algorithm::ring, {1, 4}, 1e6, 1);
  EXPECT_EQ(one.network_steps, 0);
  EXPECT_DOUBLE_EQ(one.local_steps, 6);
  EXPECT_DOUBLE_EQ(one.local_bytes, 1.5e6);
}

TEST(HostLinkModelTest, HalvingDoublingCardCarriesEveryRanksHalves) {
  // n = 8, L = 2: rounds of mask 4 and 2 cross hosts with both ranks of a
  // host sending Ŝ/2 and Ŝ/4; mask 1 stays within (Ŝ/8), each way.
  const auto t = host_link_terms(Algorithm::halving_doubling, {4, 2}, 1e6, 4);
  EXPECT_DOUBLE_EQ(t.network_steps, 4);                   // 2·log2 H
  EXPECT_DOUBLE_EQ(t.card_bytes, 2 * 2 * 3.0 / 4 * 250e3);  // 2L(H−1)/H·Ŝ
  EXPECT_DOUBLE_EQ(t.local_steps, 2);                     // 2·log2 L
  EXPECT_DOUBLE_EQ(t.local_bytes, 2 * 250e3 / 8);          // 2(L−1)/n·Ŝ
  // One rank per host: perf_model.h's terms.
  const auto flat = host_link_terms(Algorithm::halving_doubling, {8, 1}, 1e6, 4);
  const auto single = model_terms(Algorithm::halving_doubling, 8, 1e6, 4);
  EXPECT_DOUBLE_EQ(flat.network_steps, single.steps);
  EXPECT_DOUBLE_EQ(flat.card_bytes, single.wire_bytes);
  // 5 ranks: the fold and unfold send the whole vector (Ŝ each), halving and
  // doubling among 4 survivors 3/4·Ŝ each: 6 steps.
  const auto folded = host_link_terms(Algorithm::halving_doubling, {5, 1}, 1e6, 1);
  EXPECT_DOUBLE_EQ(folded.network_steps, 6);
  EXPECT_DOUBLE_EQ(folded.card_bytes, 1e6 + 0.75e6 + 0.75e6 + 1e6);
}

TEST(HostLinkModelTest, RefusesWhatItDoesNotModel) {
  EXPECT_THROW(host_link_terms(Algorithm::native, {2, 2}, 1e6, 1), InvalidArgument);
  EXPECT_THROW(host_link_terms(Algorithm::ring, {0, 2}, 1e6, 1), InvalidArgument);
  EXPECT_THROW(host_link_terms(Algorithm::hierarchical, {2, 2}, 1e6, 1, Algorithm::native),
               InvalidArgument);
}

TEST(HostLinkModelTest, FitRecoversKnownCoefficients) {
  const CodecCost fp32{1, 14e9, 0};
  std::vector<HostLinkSample> one_host, one_rank_hosts;
  for (double bytes = 256e3; bytes <= 64e6; bytes *= 4) {
    const auto local = host_link_terms(Algorithm::hierarchical, {1, 2}, bytes, 1);
    one_host.push_back({local, fp32, predict_host_link_seconds(local, kLinks, fp32)});
    const auto network = host_link_terms(Algorithm::ring, {4, 1}, bytes, 1);
    one_rank_hosts.push_back({network, fp32, predict_host_link_seconds(network, kLinks, fp32)});
  }
  const auto fit = fit_host_links(one_host, one_rank_hosts);
  EXPECT_NEAR(fit.network_alpha, kLinks.network_alpha, 1e-9 * kLinks.network_alpha);
  EXPECT_NEAR(fit.network_beta, kLinks.network_beta, 1e-9 * kLinks.network_beta);
  EXPECT_NEAR(fit.local_alpha, kLinks.local_alpha, 1e-9 * kLinks.local_alpha);
  EXPECT_NEAR(fit.local_beta, kLinks.local_beta, 1e-9 * kLinks.local_beta);
  // A sample of the other level in a set is refused.
  EXPECT_THROW(fit_host_links(one_rank_hosts, one_rank_hosts), InvalidArgument);
  EXPECT_THROW(fit_host_links(one_host, {}), InvalidArgument);
}

TEST(AlgorithmChoiceTest, TinyMessageOnManyRanksTakesTheFewestSteps) {
  // 1 KiB on 1,024 one-rank hosts: ring's 2046 latency-bound steps against
  // halving-doubling's 20.
  const auto choice = choose_algorithm({{1024, 1}, 1024, {}, true}, kLinks);
  EXPECT_EQ(choice.algorithm, Algorithm::halving_doubling);
  ASSERT_EQ(choice.candidates.size(), 2u);  // no hierarchical with one rank per host
  EXPECT_NE(choice.reason.find("halving-doubling"), std::string::npos);
  EXPECT_NE(choice.reason.find("ring"), std::string::npos);
}

TEST(AlgorithmChoiceTest, HugeMessageOnFewHostsTakesTheRing) {
  // 1 GiB on 6 one-rank hosts: halving-doubling folds the whole vector over
  // a card (3.5·S per card against the ring's 5/3·S).
  const auto choice = choose_algorithm({{6, 1}, 1 << 30, {}, true}, kLinks);
  EXPECT_EQ(choice.algorithm, Algorithm::ring);
}

TEST(AlgorithmChoiceTest, SeveralRanksPerHostOnSlowLinksTakeHierarchical) {
  // 64 MiB on 4 hosts of 8 at 100 Mbit/s: the card carries 1.5·S for
  // hierarchical, 1.94·S for the ring and 12·S for halving-doubling.
  const ChoiceQuery query{{4, 8}, 64 << 20, kCodec, true};
  const auto choice = choose_algorithm(query, kLinks);
  EXPECT_EQ(choice.algorithm, Algorithm::hierarchical);
  EXPECT_EQ(choice.candidates.size(), 3u);
  ChoiceQuery refused = query;
  refused.hierarchical_allowed = false;
  EXPECT_EQ(choose_algorithm(refused, kLinks).algorithm, Algorithm::ring);
}

TEST(AlgorithmChoiceTest, BuiltInCoefficientsArePositive) {
  const auto links = measured_host_links();
  EXPECT_GT(links.network_beta, 0);
  EXPECT_GT(links.local_beta, 0);
  EXPECT_GE(links.network_alpha, 0);
  EXPECT_GE(links.local_alpha, 0);
  EXPECT_TRUE(measured_codec_cost("fp32").has_value());
  EXPECT_TRUE(measured_codec_cost("global-qsgd:bits=8,dither=linear,norm=inf,sparse=off").has_value());
  EXPECT_FALSE(measured_codec_cost("topk:ratio=0.01").has_value());
}

}  // namespace
}  // namespace qccl
