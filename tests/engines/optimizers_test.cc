// The in-place optimizers are libtorch's SGD, Adam and AdamW to the bit —
// parameters and states after every step, with every option, checkpoints
// interchangeable — and, unlike libtorch's, allocate no parameter-sized
// tensor after their first step.
#include <gtest/gtest.h>
#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>

#include <atomic>
#include <cmath>
#include <functional>
#include <iostream>
#include <span>
#include <sstream>

#include "qccl/common/errors.h"
#include "qccl/engines/adam_kernel.h"
#include "qccl/engines/optimizers.h"
#include "qccl/training/optimizer_choice.h"

namespace qccl::engines {
namespace {

namespace optim = torch::optim;

// Counts the CPU allocations of at least `large` bytes made through
// libtorch's allocator while installed (RAII: the previous one returns).
class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(std::size_t large) : inner_(c10::GetCPUAllocator()), large_(large) {
    c10::SetCPUAllocator(this, 0);
  }
  ~CountingAllocator() override { c10::SetCPUAllocator(inner_, 0); }
  c10::DataPtr allocate(std::size_t bytes) const override {
    if (bytes >= large_) ++count_;
    return inner_->allocate(bytes);
  }
  c10::DeleterFnPtr raw_deleter() const override { return inner_->raw_deleter(); }
  std::size_t count() const { return count_; }
  void reset() { count_ = 0; }

 private:
  c10::Allocator* inner_;
  std::size_t large_;
  mutable std::atomic<std::size_t> count_{0};
};

constexpr std::int64_t kLargest = 3 * 30011;

// Parameters of awkward shapes, the same values in every call. The largest
// is split across libtorch's intra-op threads; the second is a transposed
// view (not contiguous), which the one-pass Adam leaves to libtorch's
// operations.
std::vector<torch::Tensor> parameters() {
  std::vector<torch::Tensor> params;
  for (const auto& shape : std::vector<std::vector<std::int64_t>>{
           {7, 13}, {11, 9}, {1000}, {3, kLargest / 3}, {3, 1, 5}, {4}}) {
    const auto n = c10::multiply_integers(shape);
    auto values = torch::cos(torch::arange(n, torch::kFloat) * 0.61f).reshape(shape);
    if (params.size() == 1) values = values.t();
    params.push_back(values.requires_grad_());
  }
  return params;
}

// Gradients that change with the step; the last parameter has none on odd
// steps (an unused parameter), which both optimizers must skip alike.
void set_gradients(std::vector<torch::Tensor>& params, int step) {
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto& p = params[i];
    if (i + 1 == params.size() && step % 2 == 1) {
      p.mutable_grad() = torch::Tensor();
      continue;
    }
    const auto n = p.numel();
    auto g = torch::sin(torch::arange(n, torch::kFloat) * (0.37f * static_cast<float>(step + 1)) +
                        static_cast<float>(i)) * (1.0f + static_cast<float>(step % 3));
    p.mutable_grad() = g.reshape(p.sizes());
  }
}

using Factory = std::function<std::unique_ptr<optim::Optimizer>(std::vector<torch::Tensor>)>;

struct OptimizerCase {
  std::string name;
  Factory libtorch, in_place;
};

void PrintTo(const OptimizerCase& c, std::ostream* out) { *out << c.name; }

template <class Reference, class Ours, class Options>
OptimizerCase make_case(std::string name, Options options) {
  return {std::move(name),
          [options](std::vector<torch::Tensor> p) { return std::make_unique<Reference>(p, options); },
          [options](std::vector<torch::Tensor> p) { return std::make_unique<Ours>(p, options); }};
}

std::vector<OptimizerCase> cases() {
  return {
      make_case<optim::SGD, InPlaceSGD>("sgd", optim::SGDOptions(0.1)),
      make_case<optim::SGD, InPlaceSGD>("sgd_momentum", optim::SGDOptions(0.1).momentum(0.9)),
      make_case<optim::SGD, InPlaceSGD>(
          "sgd_momentum_dampening_decay",
          optim::SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(0.01)),
      make_case<optim::SGD, InPlaceSGD>(
          "sgd_nesterov_decay", optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01)),
      make_case<optim::Adam, InPlaceAdam>("adam", optim::AdamOptions(0.01)),
      make_case<optim::Adam, InPlaceAdam>("adam_decay_betas",
                                          optim::AdamOptions(0.01).betas({0.8, 0.99}).eps(1e-6).weight_decay(0.05)),
      make_case<optim::Adam, InPlaceAdam>("adam_amsgrad", optim::AdamOptions(0.01).amsgrad(true)),
      make_case<optim::AdamW, InPlaceAdamW>("adamw", optim::AdamWOptions(0.01)),
      make_case<optim::AdamW, InPlaceAdamW>("adamw_amsgrad_no_decay",
                                            optim::AdamWOptions(0.01).weight_decay(0).amsgrad(true)),
  };
}

// One step at a learning rate that changes mid-run, as schedules do.
void step(optim::Optimizer& optimizer, std::vector<torch::Tensor>& params, int k) {
  set_gradients(params, k);
  for (auto& group : optimizer.param_groups()) group.options().set_lr(k < 3 ? 0.01 : 0.004);
  optimizer.step();
}

void expect_bitwise_equal(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b,
                          const std::string& where) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::equal(a[i], b[i])) << where << ": parameter " << i;
  }
}

class InPlaceOptimizerTest : public ::testing::TestWithParam<OptimizerCase> {};

TEST_P(InPlaceOptimizerTest, EqualsLibtorchBitwiseAtEveryStep) {
  auto reference_params = parameters();
  auto our_params = parameters();
  auto reference = GetParam().libtorch(reference_params);
  auto ours = GetParam().in_place(our_params);
  for (int k = 0; k < 7; ++k) {
    step(*reference, reference_params, k);
    step(*ours, our_params, k);
    expect_bitwise_equal(reference_params, our_params, "step " + std::to_string(k));
  }
}

// Updating the parameters part by part, in another order than step()'s and
// with the learning rate set once per step, gives libtorch's bits: each
// parameter's update reads only its own gradient and state.
TEST_P(InPlaceOptimizerTest, PartByPartEqualsLibtorchBitwise) {
  auto reference_params = parameters();
  auto our_params = parameters();
  auto reference = GetParam().libtorch(reference_params);
  auto ours = GetParam().in_place(our_params);
  auto& partwise = dynamic_cast<PartwiseOptimizer&>(*ours);
  for (int k = 0; k < 7; ++k) {
    step(*reference, reference_params, k);
    set_gradients(our_params, k);
    for (auto& group : ours->param_groups()) group.options().set_lr(k < 3 ? 0.01 : 0.004);
    partwise.step_parameters(std::span(our_params).subspan(2));  // the last two first
    partwise.step_parameters(std::span(our_params).first(1));
    partwise.step_parameters(std::span(our_params).subspan(1, 1));
    expect_bitwise_equal(reference_params, our_params, "step " + std::to_string(k));
  }
}

TEST_P(InPlaceOptimizerTest, PartByPartRefusesATensorItDoesNotHold) {
  auto params = parameters();
  auto optimizer = GetParam().in_place(params);
  const std::vector<torch::Tensor> stranger{torch::zeros({5}, torch::requires_grad())};
  stranger[0].mutable_grad() = torch::ones({5});
  try {
    dynamic_cast<PartwiseOptimizer&>(*optimizer).step_parameters(stranger);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("not one of its parameters"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(torch::equal(stranger[0], torch::zeros({5})));
}

TEST_P(InPlaceOptimizerTest, AllocatesNothingParameterSizedAfterTheFirstStep) {
  const std::size_t large = kLargest * sizeof(float);
  for (const bool in_place : {false, true}) {
    auto params = parameters();
    auto optimizer = in_place ? GetParam().in_place(params) : GetParam().libtorch(params);
    step(*optimizer, params, 0);  // creates the state (and the scratch)
    for (int k = 1; k < 5; ++k) set_gradients(params, k);  // gradients allocated outside the count
    CountingAllocator counting(large);
    for (auto& group : optimizer->param_groups()) group.options().set_lr(0.004);
    for (int k = 1; k < 5; ++k) optimizer->step();
    if (in_place) {
      EXPECT_EQ(counting.count(), 0u) << "the in-place optimizer allocated large tensors";
    } else {
      const auto& n = GetParam().name;
      const bool allocates = n.rfind("adam", 0) == 0 || n.find("decay") != std::string::npos;
      // The reference's temporaries, so the count is known to see them.
      if (allocates) {
        EXPECT_GT(counting.count(), 0u) << "libtorch's " << n << " step allocated nothing";
      }
    }
  }
}

TEST_P(InPlaceOptimizerTest, CheckpointsInterchangeWithLibtorch) {
  // Ours for 3 steps, saved, loaded into libtorch's (and the other way),
  // then both continue: the same as either all along.
  for (const bool ours_first : {true, false}) {
    auto first_params = parameters();
    auto first = ours_first ? GetParam().in_place(first_params) : GetParam().libtorch(first_params);
    for (int k = 0; k < 3; ++k) step(*first, first_params, k);
    torch::serialize::OutputArchive out;
    first->save(out);
    std::stringstream bytes;
    out.save_to(bytes);

    auto second_params = parameters();
    for (std::size_t i = 0; i < second_params.size(); ++i) {
      torch::NoGradGuard no_grad;
      second_params[i].copy_(first_params[i]);
    }
    auto second = ours_first ? GetParam().libtorch(second_params) : GetParam().in_place(second_params);
    torch::serialize::InputArchive in;
    in.load_from(bytes);
    second->load(in);
    for (int k = 3; k < 6; ++k) {
      step(*first, first_params, k);
      step(*second, second_params, k);
    }
    expect_bitwise_equal(first_params, second_params, ours_first ? "ours, then libtorch's" : "libtorch's, then ours");
  }
}

INSTANTIATE_TEST_SUITE_P(Optimizers, InPlaceOptimizerTest, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// The one-pass Adam is what the tests above compare with libtorch: the probe
// found a rounding that reproduces libtorch's kernels here (under each of
// libtorch's instruction sets, ctest's optimizers_on_aten_* runs these tests
// with ATEN_CPU_CAPABILITY set), and the contiguous parameters take it.
TEST(OnePassAdamTest, ReproducesThisLibtorchsRounding) {
  const auto rounding = one_pass_adam_rounding();
  ASSERT_TRUE(rounding.has_value())
      << "no rounding of the one-pass Adam gives this libtorch's bits: the optimizers run "
         "libtorch's slower operations instead";
  std::cout << "one-pass Adam: add " << (rounding->fused_add ? "fused" : "rounded twice")
            << ", addcmul " << (rounding->fused_addcmul ? "fused" : "rounded twice") << "\n";
  // The probe's choice is no accident: the other roundings give other bits.
  for (const bool add : {false, true}) {
    for (const bool addcmul : {false, true}) {
      const AdamRounding other{add, addcmul};
      if (other == *rounding) continue;
      std::vector<float> p1(257), p2(257), m1(257), m2(257), v1(257), v2(257), g(257);
      for (std::size_t i = 0; i < g.size(); ++i) {
        g[i] = std::sin(0.37f * static_cast<float>(i)) * 3.1f;
        p1[i] = p2[i] = std::cos(0.61f * static_cast<float>(i));
        m1[i] = m2[i] = 0.2f * std::sin(static_cast<float>(i));
        v1[i] = v2[i] = 0.05f + 0.01f * std::cos(static_cast<float>(i));
      }
      AdamCoefficients c;
      c.beta1 = 0.9f, c.one_minus_beta1 = 0.1f, c.beta2 = 0.999f, c.one_minus_beta2 = 0.001f;
      c.sqrt_bias_correction2 = 0.1f, c.eps = 1e-8f, c.step_size = -0.01f;
      adam_update_arrays({p1.data(), g.data(), m1.data(), v1.data(), nullptr, g.size()}, c, *rounding);
      adam_update_arrays({p2.data(), g.data(), m2.data(), v2.data(), nullptr, g.size()}, c, other);
      EXPECT_TRUE(m1 != m2 || v1 != v2) << "roundings (" << add << ", " << addcmul
                                        << ") and the probe's give the same moments";
    }
  }
}

TEST(StepScratchTest, GrowsToTheLargestParameterOnlyOnce) {
  StepScratch scratch;
  const auto small = torch::zeros({3, 4});
  const auto large = torch::zeros({50});
  EXPECT_EQ(scratch.slot(small, 0).sizes(), small.sizes());
  const auto slot0 = scratch.slot(large, 0);
  const auto slot1 = scratch.slot(large, 1);
  const auto slot2 = scratch.slot(large, 2);
  EXPECT_EQ(scratch.capacity(), 3 * 50);
  EXPECT_EQ(slot1.data_ptr<float>() - slot0.data_ptr<float>(), 50);  // disjoint slots
  EXPECT_EQ(slot2.data_ptr<float>() - slot1.data_ptr<float>(), 50);
  const float* base = slot0.data_ptr<float>();
  EXPECT_EQ(scratch.slot(small, 1).data_ptr<float>(), base + 50);  // reused, not reallocated
  EXPECT_EQ(scratch.capacity(), 3 * 50);
}

TEST(MakeOptimizerTest, BuildsTheNamedInPlaceOptimizer) {
  TrainConfig config;
  auto params = parameters();
  config.optimizer = "sgd";
  EXPECT_NE(dynamic_cast<InPlaceSGD*>(make_optimizer(config, params).get()), nullptr);
  config.optimizer = "adam";
  EXPECT_NE(dynamic_cast<InPlaceAdam*>(make_optimizer(config, params).get()), nullptr);
  config.optimizer = "adamw";
  EXPECT_NE(dynamic_cast<InPlaceAdamW*>(make_optimizer(config, params).get()), nullptr);
  config.optimizer = "lamb";
  EXPECT_THROW(make_optimizer(config, params), InvalidArgument);
}

// Rows are what a sparse gradient may be: one sparse dimension. Others (a
// matrix sparse in both dimensions) are refused, naming the cause.
TEST(InPlaceAdamTest, RefusesSparseGradientsThatAreNotRowsNamingTheCause) {
  auto p = torch::zeros({4, 5}, torch::requires_grad());
  InPlaceAdam adam(std::vector<torch::Tensor>{p}, optim::AdamOptions(0.1));
  p.mutable_grad() = torch::eye(4, 5).to_sparse();
  try {
    adam.step();
    FAIL() << "a gradient sparse in two dimensions was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("2 sparse dimensions"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qccl::engines
