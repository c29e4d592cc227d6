// `fgemma convert` to the types of llama.cpp's K-quant presets and to the presets themselves: the
// per-tensor types (with llama.cpp's fallback for rows that are not whole 256-value super-blocks),
// general.file_type, and logits of the converted file no further from the bf16 source's than q4_0's.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "io/gguf.h"
#include "io/io_test_util.h"
#include "convert/convert.h"
#include "model/model.h"
#include "runtime/session.h"

namespace fgemma {
namespace convert_kquant {
namespace {

struct Scratch {
  std::string path = test::TempDir();
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

std::string MiniDir() { return test::FixturePath("models/mini-bf16"); }

// Logits at every position of a fixed token list.
std::vector<float> Logits(const std::string& path) {
  auto model = std::shared_ptr<const Model>(Model::Load(path).value());
  const std::vector<int32_t> tokens = {2, 105, 2364, 107, 9259, 236764, 1217, 1405, 611, 236881};
  SessionOptions o;
  o.context = 32;
  o.threads = 2;
  auto s = Session::Create(model, o).value();
  const size_t vocab = static_cast<size_t>(model->config().vocab_size);
  std::vector<float> logits(tokens.size() * vocab);
  std::vector<HeadRequest> heads(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) heads[i].index = i, heads[i].logits = logits.data() + i * vocab;
  EXPECT_TRUE(s->Evaluate(tokens, heads).ok());
  return logits;
}

double RelativeRms(const std::vector<float>& got, const std::vector<float>& ref) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    err += (got[i] - ref[i]) * (got[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  return std::sqrt(err / norm);
}

// The mini model's matrices are 64 or 128 values wide: the K types all take their fallback.
TEST(ConvertKQuant, EachTypeWritesLoadsAndStaysCloseToTheSource) {
  const Scratch scratch;
  const std::vector<float> ref = Logits(MiniDir());
  struct Case {
    const char* type;
    uint32_t ggml_type;  // of every matrix (the norms stay F32)
    uint32_t file_type;
    bool fallback;
  };
  // q4_0 and q8_0 first: the yardsticks (the synthetic mini model is sensitive: q4_0 moves its logits
  // by about a fifth of their RMS). Every new type has at least q4_0's precision; q6_K falls back to
  // q8_0 entirely, so it gives q8_0's logits.
  const Case cases[] = {{"q4_0", 2, 2, false},  {"q8_0", 8, 7, false},  {"q4_1", 3, 3, false}, {"q5_0", 6, 8, false},
                        {"q5_1", 7, 9, false}, {"q4_K", 6, 14, true}, {"q5_K", 7, 16, true}, {"q6_K", 8, 18, true}};
  double q4_rms = 0;
  std::vector<float> q8_logits;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.type);
    const std::string out = scratch.path + "/mini-" + c.type + ".gguf";
    ConvertOptions o;
    ASSERT_TRUE(ParseConvertTarget(c.type, &o).ok());
    auto r = ConvertToGguf(MiniDir(), out, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    bool warned = false;
    for (const std::string& w : r->warnings) warned |= test::Contains(w, "not a multiple of 256 values");
    EXPECT_EQ(warned, c.fallback);
    auto f = GgufFile::Open(out);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(f->GetU32("general.file_type").value(), c.file_type);
    for (const GgufTensorInfo& t : f->tensors()) {
      if (t.n_dims == 2) EXPECT_EQ(t.ggml_type, c.ggml_type) << t.name;
    }
    const std::vector<float> logits = Logits(out);
    const double rms = RelativeRms(logits, ref);
    std::printf("%s: logits' relative RMS difference from the bf16 source %.4f\n", c.type, rms);
    if (std::string(c.type) == "q4_0") q4_rms = rms;
    if (std::string(c.type) == "q8_0") q8_logits = logits;
    EXPECT_LE(rms, 1.05 * q4_rms);
    if (std::string(c.type) == "q6_K") EXPECT_EQ(logits, q8_logits);
  }
}

// q4_K_M: llama-quantize's choice per tensor (q6_K for the embedding and for attn_v / ffn_down of
// layers 0, 3, 6, 7 of 8), then the fallback for the mini model's narrow rows: q6_K -> q8_0,
// q4_K -> q5_0.
TEST(ConvertKQuant, PresetsPickLlamaCppsTensorTypes) {
  const Scratch scratch;
  const std::string out = scratch.path + "/mini-q4_K_M.gguf";
  ConvertOptions o;
  ASSERT_TRUE(ParseConvertTarget("Q4_K_M", &o).ok());
  EXPECT_EQ(o.type, DType::kQ4_K);
  EXPECT_EQ(ConvertTargetName(o.type, o.preset), "q4_K_M");
  ASSERT_TRUE(ConvertToGguf(MiniDir(), out, o).ok());
  auto f = GgufFile::Open(out);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->GetU32("general.file_type").value(), 15u);
  size_t q8 = 0, q5 = 0;
  for (const GgufTensorInfo& t : f->tensors()) {
    if (t.n_dims != 2) continue;
    bool more_bits = t.name == "token_embd.weight";
    for (int layer : {0, 3, 6, 7}) {
      for (const char* n : {"attn_v", "ffn_down"})
        more_bits |= t.name == "blk." + std::to_string(layer) + "." + n + ".weight";
    }
    EXPECT_EQ(t.ggml_type, more_bits ? 8u : 6u) << t.name;
    (more_bits ? q8 : q5) += 1;
  }
  EXPECT_EQ(q8, 9u);
  EXPECT_EQ(q5, 8u * 7 - 8);
  // The rule at FunctionGemma's 18 layers: layers 0, 1, 4, 7, 10, 13, 15, 16, 17 get more bits
  // (9 ffn_down as q6_K and 9 attn_v as q8_0 in llama.cpp's Q4_K_M file).
  TensorSpec down{"", "blk.0.ffn_down.weight", TensorRole::kProjection, 0, 640, 2048, false, 0};
  std::string layers;
  for (int i = 0; i < 18; ++i) {
    down.layer = i;
    if (PresetTensorType(QuantPreset::kQ4_K_M, DType::kQ4_K, down, 18) == DType::kQ6_K) layers += std::to_string(i) + " ";
  }
  EXPECT_EQ(layers, "0 1 4 7 10 13 15 16 17 ");
  ConvertOptions bad;
  EXPECT_FALSE(ParseConvertTarget("q3_K_M", &bad).ok());
}

}  // namespace
}  // namespace convert_kquant
}  // namespace fgemma
