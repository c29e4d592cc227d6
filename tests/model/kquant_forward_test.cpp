// A whole forward pass on weights of each of the types llama.cpp's K-quant presets write (q4_1,
// q5_0, q5_1, q4_K, q5_K, q6_K; a model assembled in memory with every matrix 256-wide multiples):
// the logits are those of the same weights decoded to f32, up to the activations' int8 rounding
// (no further than q8_0's on the same model); and one thread gives the bits of two.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "model/model.h"
#include "model/tensor_list.h"
#include "runtime/session.h"
#include "test_support.h"

namespace fgemma {
namespace kquant_forward {
namespace {

ModelConfig KFriendlyConfig() {
  ModelConfig c = ConfigByName("tiny-mqa").value();  // vocab 512, 8 layers
  c.hidden = 256;
  c.intermediate = 512;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  c.head_dim = 128;
  EXPECT_TRUE(c.Validate().ok()) << c.Validate().ToString();
  return c;
}

// Models of `type` and of the same values decoded to f32 (tied embedding quantized too).
struct Pair {
  std::shared_ptr<const Model> quantized, decoded;
};

Pair MakePair(const ModelConfig& config, DType type) {
  auto store = std::make_shared<std::vector<std::vector<uint8_t>>>();
  auto floats = std::make_shared<std::vector<std::vector<float>>>();
  store->reserve(200);
  floats->reserve(200);
  std::mt19937 rng(static_cast<uint32_t>(type) + 1);
  std::map<std::string, size_t> index;  // tensor name -> position in store / floats
  auto make = [&](const TensorSpec& spec) {
    if (auto it = index.find(spec.hf_name); it != index.end()) return it->second;
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(spec.rows * spec.cols);
    const bool norm = spec.role == TensorRole::kNorm;
    for (float& v : x) v = norm ? 1.0f + 0.1f * normal(rng) : normal(rng) / std::sqrt(static_cast<float>(spec.cols));
    std::vector<uint8_t> bytes;
    if (!norm) {
      bytes.resize(spec.rows * RowBytes(type, spec.cols));
      for (size_t r = 0; r < spec.rows; ++r) {
        EXPECT_TRUE(QuantizeRow(type, x.data() + r * spec.cols, spec.cols, bytes.data() + r * RowBytes(type, spec.cols)).ok());
        DequantizeRow(TensorView{type, 1, static_cast<size_t>(spec.cols), bytes.data() + r * RowBytes(type, spec.cols)}, 0, x.data() + r * spec.cols);
      }
    }
    store->push_back(std::move(bytes));
    floats->push_back(std::move(x));
    index[spec.hf_name] = store->size() - 1;
    return store->size() - 1;
  };
  auto lookup = [&](bool quantized) {
    return [&, quantized](const TensorSpec& spec) -> Result<TensorView> {
      const size_t i = make(spec);
      if (!quantized || spec.role == TensorRole::kNorm) return TensorView{DType::kF32, static_cast<size_t>(spec.rows), static_cast<size_t>(spec.cols), (*floats)[i].data()};
      return TensorView{type, static_cast<size_t>(spec.rows), static_cast<size_t>(spec.cols), (*store)[i].data()};
    };
  };
  auto owner = std::make_shared<std::pair<decltype(store), decltype(floats)>>(store, floats);
  Pair p;
  p.quantized = Model::Assemble(config, lookup(true), true, owner, "quantized").value();
  p.decoded = Model::Assemble(config, lookup(false), true, owner, "decoded").value();
  return p;
}

std::vector<std::vector<float>> Logits(const std::shared_ptr<const Model>& model, const std::vector<int32_t>& tokens,
                                       int threads) {
  SessionOptions o;
  o.context = 64;
  o.threads = threads;
  auto s = Session::Create(model, o).value();
  const size_t vocab = static_cast<size_t>(model->config().vocab_size);
  std::vector<std::vector<float>> logits(tokens.size(), std::vector<float>(vocab));
  std::vector<HeadRequest> heads(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) heads[i].index = i, heads[i].logits = logits[i].data();
  EXPECT_TRUE(s->Evaluate(tokens, heads).ok());
  return logits;
}

TEST(KQuantForward, LogitsMatchTheDecodedWeightsAndThreadsChangeNoBit) {
  const ModelConfig config = KFriendlyConfig();
  const std::vector<int32_t> tokens = {2, 17, 300, 45, 511, 8, 99, 123, 7, 64, 250, 3};
  // q8_0 first: the existing int8 path's difference, from the same activation rounding, is the yardstick.
  double q8_relative = 0;
  for (DType type : {DType::kQ8_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    SCOPED_TRACE(DTypeName(type));
    const Pair p = MakePair(config, type);
    EXPECT_EQ(p.quantized->weight_type_name(), DTypeName(type));
    const auto got = Logits(p.quantized, tokens, 2), ref = Logits(p.decoded, tokens, 2);
    double err = 0, norm = 0;
    size_t same_argmax = 0;
    for (size_t t = 0; t < tokens.size(); ++t) {
      for (size_t v = 0; v < got[t].size(); ++v) {
        err += (got[t][v] - ref[t][v]) * (got[t][v] - ref[t][v]);
        norm += ref[t][v] * ref[t][v];
      }
      same_argmax += std::max_element(got[t].begin(), got[t].end()) - got[t].begin() ==
                     std::max_element(ref[t].begin(), ref[t].end()) - ref[t].begin();
    }
    const double relative = std::sqrt(err / norm);
    std::printf("%s: logits' relative RMS difference from the decoded f32 weights %.4f, same argmax %zu/%zu\n",
                DTypeName(type), relative, same_argmax, tokens.size());
    if (type == DType::kQ8_0) q8_relative = relative;
    EXPECT_LT(relative, 1.5 * q8_relative);
    EXPECT_LT(relative, 0.05);
    EXPECT_GE(same_argmax, tokens.size() - 2);
    EXPECT_EQ(Logits(p.quantized, tokens, 1), got);
  }
}

}  // namespace
}  // namespace kquant_forward
}  // namespace fgemma
