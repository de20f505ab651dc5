#include "qccl/models/tasks.h"

#include <cmath>
#include <limits>

#include "qccl/common/counter_rng.h"
#include "qccl/common/errors.h"
#include "qccl/data/click_data.h"
#include "qccl/data/image_set.h"
#include "qccl/data/text_corpus.h"

namespace qccl::engines {
namespace nn = torch::nn;
namespace F = torch::nn::functional;

double Task::metric(const EvalSums& sums) const {
  if (sums.predictions == 0) return 0;
  if (metric_name() == "perplexity") return std::exp(sums.loss / sums.predictions);
  return sums.correct / sums.predictions;
}

torch::Tensor Task::features(const torch::Tensor&) {
  throw InvalidArgument("this model has no feature layer; use --model cnn");
}

torch::Tensor Task::next_token_logits(const torch::Tensor&) {
  throw InvalidArgument("this model predicts no characters; use --model char-lstm or gpt");
}

namespace {

// Fills `tensor` with U(-bound, bound) from the counter generator keyed by
// (seed, parameter index).
void fill_uniform(torch::Tensor tensor, double bound, std::uint64_t seed, std::uint64_t index) {
  const CounterRng rng(seed, 0, index, 0, RngStream::init);
  auto values = tensor.contiguous();
  float* data = values.data_ptr<float>();
  for (std::int64_t i = 0; i < values.numel(); ++i) {
    data[i] = static_cast<float>((2.0 * rng.uniform(static_cast<std::uint64_t>(i)) - 1.0) * bound);
  }
  torch::NoGradGuard no_grad;
  tensor.copy_(values);
}

// PyTorch's default rule for linear and convolution layers (kaiming-uniform
// with a = √5): weights and biases U(±1/√fan_in); embeddings and recurrent
// weights get the bound their module passes as `fixed_bound`.
void initialize_module_impl(nn::Module& module, std::uint64_t seed, double fixed_bound) {
  std::uint64_t index = 0;
  double fan_in = 1;
  for (auto& item : module.named_parameters()) {
    torch::Tensor& p = item.value();
    if (fixed_bound > 0) {
      fill_uniform(p, fixed_bound, seed, index++);
      continue;
    }
    if (p.dim() >= 2) fan_in = static_cast<double>(p.numel() / p.size(0));
    fill_uniform(p, 1.0 / std::sqrt(fan_in), seed, index++);
  }
}

// Test sums of a classifier: summed cross-entropy of `logits` [N, C]
// against `target` [N], and how many argmaxes hit.
EvalSums classification_sums(const torch::Tensor& logits, const torch::Tensor& target) {
  return {F::cross_entropy(logits, target, F::CrossEntropyFuncOptions().reduction(torch::kSum))
              .item<double>(),
          logits.argmax(1).eq(target).sum().item<double>(), static_cast<double>(target.size(0))};
}

// ---- Fashion-MNIST: the MLP and the CNN ------------------------------------

struct MlpNet : nn::Module {
  nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
  MlpNet() {
    fc1 = register_module("fc1", nn::Linear(784, 256));
    fc2 = register_module("fc2", nn::Linear(256, 128));
    fc3 = register_module("fc3", nn::Linear(128, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(fc1(x.flatten(1)));
    return fc3(torch::relu(fc2(x)));
  }
};

// Two 5×5 convolutions with max-pooling, then two linear layers (about
// 80 k parameters): 28×28 → 24×24×16 → 12×12×16 → 8×8×32 → 4×4×32 → 128 → 10.
struct CnnNet : nn::Module {
  nn::Conv2d conv1{nullptr}, conv2{nullptr};
  nn::Linear fc1{nullptr}, fc2{nullptr};
  CnnNet() {
    conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 16, 5)));
    conv2 = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(16, 32, 5)));
    fc1 = register_module("fc1", nn::Linear(512, 128));
    fc2 = register_module("fc2", nn::Linear(128, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    return fc2(features(x));
  }
  // The penultimate layer: 128 ReLU units.
  torch::Tensor features(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);
    return torch::relu(fc1(x.flatten(1)));
  }
};

// A residual MLP with many tensors, for bucket scheduling (MergeComp §3.2:
// models of a hundred or more tensors, where compressing layer by layer
// pays a fixed cost per tensor): 784 → 512, then 24 pre-norm blocks
// x + W·relu(LayerNorm(x)), then LayerNorm and 512 → 10. 102 tensors,
// 6.7 M parameters.
struct ResMlpNet : nn::Module {
  static constexpr int kWidth = 512, kDepth = 24;
  nn::Linear input{nullptr}, head{nullptr};
  nn::LayerNorm final_norm{nullptr};
  std::vector<nn::LayerNorm> norms;
  std::vector<nn::Linear> layers;
  ResMlpNet() {
    input = register_module("input", nn::Linear(784, kWidth));
    for (int i = 0; i < kDepth; ++i) {
      norms.push_back(register_module("block" + std::to_string(i) + "_norm",
                                      nn::LayerNorm(nn::LayerNormOptions({kWidth}))));
      layers.push_back(register_module("block" + std::to_string(i) + "_fc", nn::Linear(kWidth, kWidth)));
    }
    final_norm = register_module("final_norm", nn::LayerNorm(nn::LayerNormOptions({kWidth})));
    head = register_module("head", nn::Linear(kWidth, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = input(x.flatten(1));
    for (int i = 0; i < kDepth; ++i) x = x + layers[i](torch::relu(norms[i](x)));
    return head(torch::relu(final_norm(x)));
  }
  // LayerNorm starts as the identity (weight 1, bias 0), as PyTorch's does.
  void reset_norms() {
    torch::NoGradGuard no_grad;
    for (auto& norm : norms) {
      norm->weight.fill_(1);
      norm->bias.zero_();
    }
    final_norm->weight.fill_(1);
    final_norm->bias.zero_();
  }
};

template <typename Net>
class ImageTask final : public Task {
 public:
  ImageTask(const std::string& directory)
      : train_(data::read_fashion_mnist(directory, data::Split::train)),
        test_(data::read_fashion_mnist(directory, data::Split::test)) {
    if (train_.rows != 28 || train_.cols != 28 || test_.rows != 28 || test_.cols != 28) {
      throw InvalidArgument("'" + directory + "': the image models need 28×28 images");
    }
  }
  std::string metric_name() const override { return "accuracy"; }
  std::size_t train_size() const override { return train_.size(); }
  std::size_t test_size() const override { return test_.size(); }
  torch::nn::Module& model() override { return net_; }
  void initialize(std::uint64_t seed) override {
    initialize_module(net_, seed);
    if constexpr (requires { net_.reset_norms(); }) net_.reset_norms();
  }

  // Pixels scaled to [0,1] and standardised with Fashion-MNIST's training
  // mean and deviation.
  Batch batch(std::span<const std::uint32_t> samples, bool test) const override {
    const data::ImageSet& set = test ? test_ : train_;
    const auto b = static_cast<std::int64_t>(samples.size());
    auto input = torch::empty({b, 1, 28, 28});
    auto target = torch::empty({b}, torch::kInt64);
    float* x = input.data_ptr<float>();
    std::int64_t* y = target.data_ptr<std::int64_t>();
    const std::size_t pixels = set.pixels_per_image();
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const std::uint8_t* image = set.pixels.data() + std::size_t{samples[i]} * pixels;
      for (std::size_t p = 0; p < pixels; ++p) {
        x[i * pixels + p] = (static_cast<float>(image[p]) / 255.0f - kFashionMnistMean) / kFashionMnistStd;
      }
      y[i] = set.labels[samples[i]];
    }
    return {input, target};
  }
  torch::Tensor loss(const Batch& batch) override {
    return F::cross_entropy(net_.forward(batch.input), batch.target);
  }
  EvalSums evaluate(const Batch& batch) override {
    torch::NoGradGuard no_grad;
    return classification_sums(net_.forward(batch.input), batch.target);
  }
  torch::Tensor features(const torch::Tensor& input) override {
    if constexpr (requires { net_.features(input); }) {
      torch::NoGradGuard no_grad;
      return net_.features(input);
    } else {
      return Task::features(input);
    }
  }

 private:
  data::ImageSet train_, test_;
  Net net_;
};

// ---- Character-level language models on fortunes -----------------------------

struct CharLstmNet : nn::Module {
  nn::Embedding embed{nullptr};
  nn::LSTM lstm{nullptr};
  nn::Linear head{nullptr};
  std::int64_t hidden;
  CharLstmNet(std::int64_t vocabulary, const ModelConfig& config)
      : hidden(static_cast<std::int64_t>(config.hidden)) {
    embed = register_module("embed", nn::Embedding(vocabulary, 64));
    lstm = register_module("lstm", nn::LSTM(nn::LSTMOptions(64, hidden).batch_first(true)));
    head = register_module("head", nn::Linear(hidden, vocabulary));
  }
  void initialize(std::uint64_t seed) {
    initialize_module_impl(*embed, seed, 0.1);
    initialize_module_impl(*lstm, seed + 1, 1.0 / std::sqrt(static_cast<double>(hidden)));
    initialize_module_impl(*head, seed + 2, 0);
  }
  torch::Tensor forward(torch::Tensor tokens) {
    auto out = std::get<0>(lstm->forward(embed(tokens)));
    return head(out);  // [batch, length, vocabulary]
  }
};

// One pre-norm transformer block (GPT-2's layout, Radford et al. 2019):
// x + attention(LayerNorm(x)), then + MLP(LayerNorm(·)) with a 4× GELU
// hidden layer. Attention is causal: position t attends to positions <= t
// (`mask` holds −∞ above the diagonal).
struct GptBlockImpl : nn::Module {
  nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  nn::Linear qkv{nullptr}, proj{nullptr}, up{nullptr}, down{nullptr};
  std::int64_t heads;
  GptBlockImpl(std::int64_t width, std::int64_t heads_) : heads(heads_) {
    norm1 = register_module("norm1", nn::LayerNorm(nn::LayerNormOptions({width})));
    qkv = register_module("qkv", nn::Linear(width, 3 * width));
    proj = register_module("proj", nn::Linear(width, width));
    norm2 = register_module("norm2", nn::LayerNorm(nn::LayerNormOptions({width})));
    up = register_module("up", nn::Linear(width, 4 * width));
    down = register_module("down", nn::Linear(4 * width, width));
  }
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) {
    const auto b = x.size(0), t = x.size(1), width = x.size(2), head = width / heads;
    auto parts = qkv(norm1(x)).view({b, t, 3, heads, head}).permute({2, 0, 3, 1, 4});
    auto scores = parts[0].matmul(parts[1].transpose(-2, -1)) / std::sqrt(static_cast<double>(head));
    auto mixed = torch::softmax(scores + mask, -1).matmul(parts[2]);  // [b, heads, t, head]
    auto h = x + proj(mixed.transpose(1, 2).reshape({b, t, width}));
    return h + down(F::gelu(up(norm2(h))));
  }
};
TORCH_MODULE(GptBlock);

// A small GPT-style decoder over characters: token and learned position
// embeddings, `layers` pre-norm blocks of width/64 heads of 64 (one head
// when the width is no multiple of 64), a final LayerNorm and the output tied to the token embedding
// (logits = h·Eᵀ, no separate head). With a block runner (the sharded
// engine) each block runs through it.
struct GptNet : nn::Module {
  nn::Embedding tokens{nullptr}, positions{nullptr};
  nn::ModuleList blocks{nullptr};
  nn::LayerNorm norm{nullptr};
  BlockRunner* runner = nullptr;
  std::size_t outlier_rows = 0;
  double outlier_scale = 1.0;
  GptNet(std::int64_t vocabulary, const ModelConfig& config)
      : outlier_rows(config.gpt_outlier_rows), outlier_scale(config.gpt_outlier_scale) {
    const auto width = static_cast<std::int64_t>(config.hidden);
    tokens = register_module("tokens", nn::Embedding(vocabulary, width));
    positions = register_module("positions",
                                nn::Embedding(static_cast<std::int64_t>(config.sequence_length), width));
    blocks = register_module("blocks", nn::ModuleList());
    for (std::size_t l = 0; l < config.layers; ++l) {
      blocks->push_back(GptBlock(width, width % 64 == 0 ? width / 64 : 1));
    }
    norm = register_module("norm", nn::LayerNorm(nn::LayerNormOptions({width})));
  }
  // Embeddings U(±0.02·√3) (GPT-2's N(0, 0.02²) in spread), linear layers
  // PyTorch's default, LayerNorms the identity. With outlier rows
  // (ModelConfig::gpt_outlier_rows = R), rows ⌊j·out/R⌋, j < R, of every
  // block's linear weight are then multiplied by the scale: a few units
  // whose weights span a range many times the rest's, as trained LLMs grow
  // (Dettmers et al., LLM.int8(), arXiv:2208.07339), and which a range per
  // bucket confines where one range per layer does not (QSDP §6).
  void initialize(std::uint64_t seed) {
    initialize_module_impl(*tokens, seed, 0.02 * std::sqrt(3.0));
    initialize_module_impl(*positions, seed + 1, 0.02 * std::sqrt(3.0));
    for (std::size_t l = 0; l < blocks->size(); ++l) {
      auto& block = *blocks[l]->as<GptBlockImpl>();
      for (auto* linear : {&block.qkv, &block.proj, &block.up, &block.down}) {
        initialize_module_impl(**linear, seed + 2 + 4 * l, 0);
      }
    }
    torch::NoGradGuard no_grad;
    for (std::size_t l = 0; l < blocks->size() && outlier_rows > 0; ++l) {
      auto& block = *blocks[l]->as<GptBlockImpl>();
      for (auto* linear : {&block.qkv, &block.proj, &block.up, &block.down}) {
        auto& weight = (*linear)->weight;
        const auto rows = static_cast<std::size_t>(weight.size(0));
        for (std::size_t j = 0; j < outlier_rows; ++j) {
          weight[static_cast<std::int64_t>(j * rows / outlier_rows)].mul_(outlier_scale);
        }
      }
    }
    for (auto& item : named_parameters()) {
      if (item.key().find("norm") == std::string::npos) continue;
      item.value().fill_(item.key().ends_with("weight") ? 1.0 : 0.0);
    }
  }
  torch::Tensor forward(torch::Tensor input) {
    const auto t = input.size(1);
    const auto mask = torch::full({t, t}, -std::numeric_limits<float>::infinity()).triu(1);
    auto h = tokens(input) + positions(torch::arange(t, torch::kInt64));
    for (std::size_t l = 0; l < blocks->size(); ++l) {
      auto* block = blocks[l]->as<GptBlockImpl>();
      const BlockForward forward = [block, mask](const torch::Tensor& x) {
        return block->forward(x, mask);
      };
      h = runner != nullptr ? runner->run(l, h, forward) : forward(h);
    }
    return norm(h).matmul(tokens->weight.t());  // [batch, length, vocabulary]
  }
};

// Sample k is the window text[k·L, k·L + L] of the split: L input tokens and
// the same window shifted by one as targets. Perplexity is exp of the mean
// per-character cross-entropy over the test windows.
template <typename Net>
class CharTextTask final : public Task {
 public:
  CharTextTask(const std::string& directory, const ModelConfig& config)
      : corpus_(data::read_fortunes(directory)),
        length_(config.sequence_length),
        net_(static_cast<std::int64_t>(corpus_.vocabulary()), config) {
    if (test_size() == 0) {
      throw InvalidArgument("fortunes: test text is shorter than one sequence of " +
                            std::to_string(length_) + " characters");
    }
  }
  std::string metric_name() const override { return "perplexity"; }
  std::size_t train_size() const override { return (corpus_.train.size() - 1) / length_; }
  std::size_t test_size() const override { return (corpus_.test.size() - 1) / length_; }
  torch::nn::Module& model() override { return net_; }
  void initialize(std::uint64_t seed) override { net_.initialize(seed); }
  std::vector<torch::nn::Module*> blocks() override {
    std::vector<torch::nn::Module*> out;
    if constexpr (requires { net_.runner; }) {
      for (const auto& block : *net_.blocks) out.push_back(block.get());
    }
    return out;
  }
  void set_block_runner(BlockRunner* runner) override {
    if constexpr (requires { net_.runner; }) net_.runner = runner;
  }
  Batch batch(std::span<const std::uint32_t> samples, bool test) const override {
    const auto& text = test ? corpus_.test : corpus_.train;
    const auto b = static_cast<std::int64_t>(samples.size());
    const auto l = static_cast<std::int64_t>(length_);
    auto input = torch::empty({b, l}, torch::kInt64);
    auto target = torch::empty({b, l}, torch::kInt64);
    std::int64_t* x = input.data_ptr<std::int64_t>();
    std::int64_t* y = target.data_ptr<std::int64_t>();
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const std::size_t start = std::size_t{samples[i]} * length_;
      for (std::size_t t = 0; t < length_; ++t) {
        x[i * length_ + t] = text[start + t];
        y[i * length_ + t] = text[start + t + 1];
      }
    }
    return {input, target};
  }
  torch::Tensor loss(const Batch& batch) override {
    const auto logits = net_.forward(batch.input);
    return F::cross_entropy(logits.flatten(0, 1), batch.target.flatten());
  }
  EvalSums evaluate(const Batch& batch) override {
    torch::NoGradGuard no_grad;
    return classification_sums(net_.forward(batch.input).flatten(0, 1), batch.target.flatten());
  }
  torch::Tensor next_token_logits(const torch::Tensor& input) override {
    torch::NoGradGuard no_grad;
    return net_.forward(input);
  }

 private:
  data::TextCorpus corpus_;
  std::size_t length_;
  Net net_;
};

// ---- Recommendation model on generated clicks --------------------------------

// One embedding table per categorical field, concatenated into a small MLP
// that predicts the click. Every step's gradient spans every table, which
// makes this model communication-bound; with sparse gradients (the default)
// autograd gives only the rows the batch touched, and the engine hands the
// codec those rows (Global-QSGD sparse=auto then works in proportion to
// them).
struct RecommenderNet : nn::Module {
  std::vector<nn::Embedding> tables;
  nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
  static constexpr std::int64_t kDim = 16;
  RecommenderNet(std::size_t fields, std::int64_t values, bool sparse) {
    for (std::size_t f = 0; f < fields; ++f) {
      tables.push_back(register_module("table" + std::to_string(f),
                                       nn::Embedding(nn::EmbeddingOptions(values, kDim).sparse(sparse))));
    }
    fc1 = register_module("fc1", nn::Linear(static_cast<std::int64_t>(fields) * kDim, 128));
    fc2 = register_module("fc2", nn::Linear(128, 64));
    fc3 = register_module("fc3", nn::Linear(64, 1));
  }
  torch::Tensor forward(torch::Tensor features) {
    std::vector<torch::Tensor> embedded;
    for (std::size_t f = 0; f < tables.size(); ++f) {
      embedded.push_back(tables[f](features.select(1, static_cast<std::int64_t>(f))));
    }
    auto x = torch::relu(fc1(torch::cat(embedded, 1)));
    return fc3(torch::relu(fc2(x))).squeeze(1);
  }
};

class RecommenderTask final : public Task {
 public:
  RecommenderTask(const ModelConfig& config)
      : data_(data::ClickDataShape{config.fields, config.values_per_field, config.click_samples,
                                   std::max<std::size_t>(config.click_samples / 10, 1)},
              config.seed),
        net_(config.fields, static_cast<std::int64_t>(config.values_per_field),
             config.sparse_embeddings) {}
  std::string metric_name() const override { return "accuracy"; }
  std::size_t train_size() const override { return data_.shape().train_samples; }
  std::size_t test_size() const override { return data_.shape().test_samples; }
  torch::nn::Module& model() override { return net_; }
  void initialize(std::uint64_t seed) override {
    std::uint64_t s = seed;
    for (auto& table : net_.tables) initialize_module(*table, s++, 0.05);
    initialize_module(*net_.fc1, s++);
    initialize_module(*net_.fc2, s++);
    initialize_module(*net_.fc3, s++);
  }
  Batch batch(std::span<const std::uint32_t> samples, bool test) const override {
    const auto fields = data_.shape().fields;
    auto input = torch::empty({static_cast<std::int64_t>(samples.size()),
                               static_cast<std::int64_t>(fields)}, torch::kInt64);
    auto target = torch::empty({static_cast<std::int64_t>(samples.size())});
    std::int64_t* x = input.data_ptr<std::int64_t>();
    float* y = target.data_ptr<float>();
    for (std::size_t i = 0; i < samples.size(); ++i) {
      data_.features(samples[i], test, std::span(x + i * fields, fields));
      y[i] = data_.label(samples[i], test);
    }
    return {input, target};
  }
  torch::Tensor loss(const Batch& batch) override {
    return F::binary_cross_entropy_with_logits(net_.forward(batch.input), batch.target);
  }
  EvalSums evaluate(const Batch& batch) override {
    torch::NoGradGuard no_grad;
    const auto logits = net_.forward(batch.input);
    EvalSums sums;
    sums.loss = F::binary_cross_entropy_with_logits(
                    logits, batch.target,
                    F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kSum))
                    .item<double>();
    sums.correct = logits.gt(0).to(torch::kFloat).eq(batch.target).sum().item<double>();
    sums.predictions = static_cast<double>(batch.target.size(0));
    return sums;
  }

 private:
  data::ClickData data_;
  RecommenderNet net_;
};

std::string directory_or(const std::string& given, const char* fallback) {
  return given.empty() ? std::string(fallback) : given;
}

}  // namespace

void initialize_module(nn::Module& module, std::uint64_t seed, double fixed_bound) {
  initialize_module_impl(module, seed, fixed_bound);
}

std::unique_ptr<Task> make_task(const ModelConfig& config) {
  validate(config);
  const auto& m = config.model;
  if (m == "mlp" || m == "cnn" || m == "resmlp") {
    const auto dir = directory_or(config.data_dir, data::kFashionMnistDirectory);
    if (m == "mlp") return std::make_unique<ImageTask<MlpNet>>(dir);
    if (m == "resmlp") return std::make_unique<ImageTask<ResMlpNet>>(dir);
    return std::make_unique<ImageTask<CnnNet>>(dir);
  }
  if (m == "char-lstm" || m == "gpt") {
    const auto dir = directory_or(config.data_dir, data::kFortunesDirectory);
    if (m == "gpt") return std::make_unique<CharTextTask<GptNet>>(dir, config);
    return std::make_unique<CharTextTask<CharLstmNet>>(dir, config);
  }
  return std::make_unique<RecommenderTask>(config);
}

}  // namespace qccl::engines
