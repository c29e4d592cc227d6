// LoRA adapters (model/lora_adapter.h): the run-time path against the reference with the adapter
// merged (../shared/fixtures/lora), quantized bases within their own error, batch = token by token,
// and every malformed adapter refused with its own error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <ostream>

#include "golden_sparse.h"
#include "io/safetensors.h"
#include "model/lora_adapter.h"
#include "runtime/session.h"
#include "test_support.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

std::shared_ptr<const Model> LoadBase(const std::string& fixture) {
  auto m = Model::Load(test::FixturePath(fixture));
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::shared_ptr<const Model>(std::move(m).value());
}

std::shared_ptr<const LoraAdapter> LoadLora(const std::string& fixture, const Model& model, float scale = 1) {
  auto a = LoraAdapter::Load(test::FixturePath(fixture), model.config(), scale);
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  return a.ok() ? std::move(a).value() : nullptr;
}

// Logits at every position, evaluating `call` tokens per Evaluate.
std::vector<std::vector<float>> AllLogits(const std::shared_ptr<const Model>& model,
                                          std::shared_ptr<const LoraAdapter> lora, const std::vector<int32_t>& tokens,
                                          size_t call, size_t max_batch = 64, int threads = 2) {
  SessionOptions o;
  o.max_batch = max_batch;
  o.threads = threads;
  o.context = 256;
  o.lora = std::move(lora);
  auto s = Session::Create(model, o).value();
  const size_t vocab = static_cast<size_t>(model->config().vocab_size);
  std::vector<std::vector<float>> logits(tokens.size(), std::vector<float>(vocab));
  for (size_t begin = 0; begin < tokens.size(); begin += call) {
    const size_t n = std::min(call, tokens.size() - begin);
    std::vector<HeadRequest> heads(n);
    for (size_t i = 0; i < n; ++i) {
      heads[i].index = i;
      heads[i].logits = logits[begin + i].data();
    }
    EXPECT_TRUE(s->Evaluate(std::span<const int32_t>(tokens.data() + begin, n), heads).ok());
  }
  return logits;
}

double MaxDiff(const std::vector<std::vector<float>>& a, const Json& golden_logits) {
  double worst = 0;
  for (size_t p = 0; p < a.size(); ++p) {
    for (size_t v = 0; v < a[p].size(); ++v) worst = std::max(worst, std::abs(a[p][v] - golden_logits[p][v].get<double>()));
  }
  return worst;
}

struct TinyCase {
  const char* base;     // models/<base>
  const char* adapter;  // lora/<adapter>
  const char* golden;   // lora/<golden>
};
void PrintTo(const TinyCase& c, std::ostream* os) { *os << c.base << " + " << c.adapter; }

class LoraTinyGolden : public ::testing::TestWithParam<TinyCase> {};

TEST_P(LoraTinyGolden, RunTimePathMatchesMergedReference) {
  const TinyCase& c = GetParam();
  const Json golden = ReadJsonFile(test::FixturePath(std::string("lora/") + c.golden)).value();
  std::vector<int32_t> tokens;
  for (auto& t : golden["tokens"]) tokens.push_back(t.get<int32_t>());
  auto model = LoadBase(std::string("models/") + c.base);
  auto lora = LoadLora(std::string("lora/") + c.adapter, *model);
  ASSERT_TRUE(lora);

  // One prefill, and the same through decode (1 token per call) and odd chunks.
  const auto whole = AllLogits(model, lora, tokens, tokens.size());
  EXPECT_LT(MaxDiff(whole, golden["logits"]), 1e-4);
  for (size_t call : {1u, 7u}) {
    const auto got = AllLogits(model, lora, tokens, call);
    EXPECT_LT(MaxDiff(got, golden["logits"]), 1e-4) << "call " << call;
  }
  EXPECT_LT(MaxDiff(AllLogits(model, lora, tokens, tokens.size(), 5, 1), golden["logits"]), 1e-4) << "chunks of 5, 1 thread";
  // The base alone is far from these goldens: the adapter is what makes them match.
  EXPECT_GT(MaxDiff(AllLogits(model, nullptr, tokens, tokens.size()), golden["logits"]), 1e-2);

  // Greedy continuation through the KV-cache path.
  std::vector<int32_t> prompt, expected, got;
  for (auto& t : golden["greedy"]["prompt"]) prompt.push_back(t.get<int32_t>());
  for (auto& t : golden["greedy"]["tokens"]) expected.push_back(t.get<int32_t>());
  SessionOptions o;
  o.context = 256;
  o.threads = 2;
  o.lora = lora;
  auto s = Session::Create(model, o).value();
  ASSERT_TRUE(s->Generate(prompt, expected.size(), false, [&](int32_t t) { return got.push_back(t), true; }).ok());
  EXPECT_EQ(got, expected);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LoraTinyGolden,
                         ::testing::Values(TinyCase{"tiny-gqa-f32", "tiny-gqa-lora-s11", "golden-tiny-gqa-f32-lora-s11.json"},
                                           TinyCase{"tiny-mqa-f32", "tiny-mqa-lora-s13-rslora-qv",
                                                    "golden-tiny-mqa-f32-lora-s13.json"}),
                         [](const auto& info) { return std::string(info.param.base).substr(0, 8) == "tiny-gqa" ? "gqa" : "mqa_rslora"; });

TEST(LoraAdapter, ReadsTheConfig) {
  auto model = LoadBase("models/tiny-mqa-f32");
  auto lora = LoadLora("lora/tiny-mqa-lora-s13-rslora-qv", *model, 0.5f);
  ASSERT_TRUE(lora);
  EXPECT_EQ(lora->rank(), 4u);
  EXPECT_TRUE(lora->rslora());
  EXPECT_FLOAT_EQ(lora->scale(), 8.0f / 2.0f * 0.5f);  // alpha / sqrt(r) times the user's scale
  EXPECT_TRUE(lora->projection(0, 0).rank == 4 && lora->projection(0, 1).empty() && !lora->projection(0, 2).empty());
  // The fingerprint follows the scale.
  auto other = LoadLora("lora/tiny-mqa-lora-s13-rslora-qv", *model, 1.0f);
  EXPECT_NE(lora->fingerprint(), other->fingerprint());
  EXPECT_EQ(LoadLora("lora/tiny-mqa-lora-s13-rslora-qv", *model, 0.5f)->fingerprint(), lora->fingerprint());
}

TEST(LoraAdapter, ScaleZeroIsTheBase) {
  auto model = LoadBase("models/tiny-gqa-f32");
  auto lora = LoadLora("lora/tiny-gqa-lora-s11", *model, 0.0f);
  std::vector<int32_t> tokens{2, 10, 20, 30, 40, 50};
  const auto a = AllLogits(model, lora, tokens, tokens.size()), b = AllLogits(model, nullptr, tokens, tokens.size());
  for (size_t p = 0; p < a.size(); ++p) {
    for (size_t v = 0; v < a[p].size(); ++v) ASSERT_NEAR(a[p][v], b[p][v], 1e-5);
  }
}

TEST(LoraAdapter, ParsesDirAndScale) {
  auto s = ParseLoraSpec("adapters/smart-home:0.5").value();
  EXPECT_EQ(s.dir, "adapters/smart-home");
  EXPECT_FLOAT_EQ(s.scale, 0.5f);
  s = ParseLoraSpec("adapters/a:b").value();  // not a number: part of the path
  EXPECT_EQ(s.dir, "adapters/a:b");
  EXPECT_FLOAT_EQ(s.scale, 1.0f);
  EXPECT_FALSE(ParseLoraSpec("").ok());
  EXPECT_FALSE(ParseLoraSpec("dir:inf").ok());
}

TEST(LoraMiniGolden, Bf16BaseMatchesMergedReference) {
  auto model = LoadBase("models/mini-bf16");
  auto lora = LoadLora("lora/mini-lora-s14", *model);
  ASSERT_TRUE(lora);
  const Json golden = ReadJsonFile(test::FixturePath("lora/golden-mini-bf16-lora-s14.json")).value();
  test::CheckSparseGolden(model, golden, 2e-3, 2, lora);
}

// Logits of the mini golden's positions, at its top-10 and probe ids.
std::vector<float> SparseLogits(const std::shared_ptr<const Model>& model, std::shared_ptr<const LoraAdapter> lora,
                                const Json& golden, std::vector<double>* ref) {
  std::vector<int32_t> tokens;
  for (auto& t : golden["tokens"]) tokens.push_back(t.get<int32_t>());
  SessionOptions o;
  o.context = 128;
  o.threads = 2;
  o.lora = std::move(lora);
  auto s = Session::Create(model, o).value();
  std::vector<std::vector<float>> rows(golden["positions"].size(), std::vector<float>(262144));
  std::vector<HeadRequest> heads(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    heads[i].index = golden["positions"][i].get<size_t>();
    heads[i].logits = rows[i].data();
  }
  EXPECT_TRUE(s->Evaluate(tokens, heads).ok());
  std::vector<float> out;
  ref->clear();
  for (size_t i = 0; i < rows.size(); ++i) {
    for (const auto& e : golden["top10"][i]) out.push_back(rows[i][e[0].get<size_t>()]), ref->push_back(e[1].get<double>());
    for (size_t j = 0; j < golden["probe_ids"].size(); ++j)
      out.push_back(rows[i][golden["probe_ids"][j].get<size_t>()]), ref->push_back(golden["probe_logits"][i][j].get<double>());
  }
  return out;
}

double MaxDiff(const std::vector<float>& a, const std::vector<double>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

class LoraQuantized : public ::testing::TestWithParam<const char*> {};

// A quantized base with the adapter stays as close to the merged float reference as the same
// quantized base without it stays to the float base's reference.
TEST_P(LoraQuantized, WithinTheBasesQuantizationError) {
  const Json base_golden = test::LoadGolden("mini-bf16.json");
  const Json lora_golden = ReadJsonFile(test::FixturePath("lora/golden-mini-bf16-lora-s14.json")).value();
  auto q = LoadBase(std::string("models/mini-") + GetParam() + ".gguf");
  auto lora = LoadLora("lora/mini-lora-s14", *q);
  ASSERT_TRUE(lora);
  std::vector<double> ref_base, ref_lora;
  const double base_err = MaxDiff(SparseLogits(q, nullptr, base_golden, &ref_base), ref_base);
  const double lora_err = MaxDiff(SparseLogits(q, lora, lora_golden, &ref_lora), ref_lora);
  std::printf("[%s] max |logit - reference|: base %.4f, base + LoRA %.4f\n", GetParam(), base_err, lora_err);
  EXPECT_LT(lora_err, 1.5 * base_err + 0.02);
}

INSTANTIATE_TEST_SUITE_P(Types, LoraQuantized, ::testing::Values("q8_0", "q4_0"));

// ---- Malformed adapters -------------------------------------------------------------------------

// A writable copy of the tiny-mqa adapter (q_proj and v_proj, r = 4) to break in one way.
class LoraMalformed : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = LoadBase("models/tiny-mqa-f32");
    dir_ = test::TempDir() + "/adapter";
    std::filesystem::create_directories(dir_);
    const std::string src = test::FixturePath("lora/tiny-mqa-lora-s13-rslora-qv");
    config_ = ReadJsonFile(src + "/adapter_config.json").value();
    auto ckpt = SafetensorsCheckpoint::Open(src + "/adapter_model.safetensors").value();
    tensors_.clear();
    for (const auto& [name, t] : ckpt->tensors()) {
      Tensor copy{t.dtype, t.shape, std::vector<uint8_t>(t.data, t.data + t.bytes)};
      tensors_.emplace(name, std::move(copy));
    }
  }

  struct Tensor {
    DType dtype;
    std::vector<uint64_t> shape;
    std::vector<uint8_t> bytes;
  };

  // Writes config_ and tensors_ to dir_ and loads them.
  Status Write() {
    EXPECT_TRUE(WriteStringToFile(dir_ + "/adapter_config.json", config_.dump(2)).ok());
    std::vector<SafetensorsWriter::Entry> entries;
    for (const auto& [name, t] : tensors_) entries.push_back({name, t.dtype, t.shape});
    auto w = SafetensorsWriter::Create(dir_ + "/adapter_model.safetensors", entries, {}).value();
    for (const auto& [name, t] : tensors_) EXPECT_TRUE(w->Append(t.bytes.data(), t.bytes.size()).ok());
    EXPECT_TRUE(w->Finish().ok());
    return Load();
  }
  Status Load() { return LoraAdapter::Load(dir_, model_->config()).status(); }

  // Expects `st` to fail with `code` and a message holding `needle`.
  static void ExpectError(const Status& st, ErrorCode code, const std::string& needle) {
    ASSERT_FALSE(st.ok()) << "expected an error naming " << needle;
    EXPECT_EQ(st.code(), code) << st.ToString();
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.ToString();
  }

  static constexpr const char* kQA = "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight";
  static constexpr const char* kQB = "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight";
  std::shared_ptr<const Model> model_;
  std::string dir_;
  Json config_;
  std::map<std::string, Tensor> tensors_;
};

TEST_F(LoraMalformed, TheUnbrokenCopyLoads) { EXPECT_TRUE(Write().ok()) << Write().ToString(); }

TEST_F(LoraMalformed, MissingFiles) {
  ExpectError(LoraAdapter::Load(dir_ + "/nowhere", model_->config()).status(), ErrorCode::kNotFound, "nowhere");
  ExpectError(Load(), ErrorCode::kNotFound, "adapter_config.json");
  ASSERT_TRUE(WriteStringToFile(dir_ + "/adapter_config.json", config_.dump()).ok());
  ExpectError(Load(), ErrorCode::kNotFound, "adapter_model.safetensors");
}

TEST_F(LoraMalformed, MissingConfigFields) {
  for (const char* field : {"peft_type", "r", "lora_alpha", "target_modules"}) {
    SCOPED_TRACE(field);
    Json saved = config_;
    config_.erase(field);
    ExpectError(Write(), ErrorCode::kInvalidArgument, std::string("missing field '") + field + "'");
    config_ = saved;
  }
}

TEST_F(LoraMalformed, RankZeroAndBadValues) {
  config_["r"] = 0;
  ExpectError(Write(), ErrorCode::kInvalidArgument, "field 'r' is 0");
  config_["r"] = "4";
  ExpectError(Write(), ErrorCode::kInvalidArgument, "field 'r' must be an integer");
  config_["r"] = 4;
  config_["lora_alpha"] = "eight";
  ExpectError(Write(), ErrorCode::kInvalidArgument, "lora_alpha");
  config_["lora_alpha"] = 8;
  config_["peft_type"] = "IA3";
  ExpectError(Write(), ErrorCode::kUnsupported, "peft_type");
}

TEST_F(LoraMalformed, DoraIsRefused) {
  config_["use_dora"] = true;
  ExpectError(Write(), ErrorCode::kUnsupported, "use_dora");
  // DoRA magnitude vectors saved with use_dora false are refused by name as well.
  config_["use_dora"] = false;
  tensors_["base_model.model.model.layers.0.self_attn.q_proj.lora_magnitude_vector"] =
      Tensor{DType::kF32, {128}, std::vector<uint8_t>(128 * 4)};
  ExpectError(Write(), ErrorCode::kUnsupported, "lora_magnitude_vector");
}

TEST_F(LoraMalformed, ModulesToSaveIsRefused) {
  config_["modules_to_save"] = Json::array({"lm_head"});
  ExpectError(Write(), ErrorCode::kUnsupported, "modules_to_save");
  config_["modules_to_save"] = nullptr;
  tensors_["base_model.model.model.layers.0.mlp.modules_to_save.default.weight"] = Tensor{DType::kF32, {1, 1}, std::vector<uint8_t>(4)};
  ExpectError(Write(), ErrorCode::kUnsupported, "modules_to_save");
}

TEST_F(LoraMalformed, EmbeddingAndHeadAdaptersAreRefused) {
  config_["target_modules"] = Json::array({"q_proj", "v_proj", "embed_tokens"});
  ExpectError(Write(), ErrorCode::kUnsupported, "embedding adapters ('embed_tokens')");
  config_["target_modules"] = Json::array({"q_proj", "v_proj", "lm_head"});
  ExpectError(Write(), ErrorCode::kUnsupported, "head adapters ('lm_head')");
  config_["target_modules"] = Json::array({"q_proj", "v_proj"});
  tensors_["base_model.model.model.embed_tokens.lora_embedding_A"] = Tensor{DType::kF32, {4, 512}, std::vector<uint8_t>(4 * 512 * 4)};
  ExpectError(Write(), ErrorCode::kUnsupported, "embedding adapter tensor 'base_model.model.model.embed_tokens.lora_embedding_A'");
}

TEST_F(LoraMalformed, BiasesAreRefused) {
  config_["bias"] = "lora_only";
  ExpectError(Write(), ErrorCode::kUnsupported, "bias is \"lora_only\"");
  config_["bias"] = "none";
  tensors_["base_model.model.model.layers.0.self_attn.q_proj.lora_B.bias"] = Tensor{DType::kF32, {128}, std::vector<uint8_t>(128 * 4)};
  ExpectError(Write(), ErrorCode::kUnsupported, "bias tensor 'base_model.model.model.layers.0.self_attn.q_proj.lora_B.bias'");
}

TEST_F(LoraMalformed, UnknownModulesAreRefused) {
  config_["target_modules"] = Json::array({"q_proj", "v_proj", "qkv_proj"});
  ExpectError(Write(), ErrorCode::kUnsupported, "unknown module 'qkv_proj'");
  config_["target_modules"] = ".*attn.*";  // PEFT's regular-expression form
  ExpectError(Write(), ErrorCode::kUnsupported, "unknown module '.*attn.*'");
  config_["target_modules"] = Json::array({"q_proj", "v_proj"});
  auto node = tensors_.extract(kQA);
  node.key() = "base_model.model.model.layers.0.self_attn.qk_proj.lora_A.weight";
  tensors_.insert(std::move(node));
  ExpectError(Write(), ErrorCode::kUnsupported, "unknown module 'qk_proj'");
}

TEST_F(LoraMalformed, TensorsOfUnlistedModulesOrLayersAreRefused) {
  config_["target_modules"] = Json::array({"v_proj"});
  ExpectError(Write(), ErrorCode::kInvalidArgument, "adapts q_proj, which target_modules");
  config_["target_modules"] = Json::array({"q_proj", "v_proj"});
  auto node = tensors_.extract(kQA);
  node.key() = "base_model.model.model.layers.8.self_attn.q_proj.lora_A.weight";
  tensors_.insert(std::move(node));
  ExpectError(Write(), ErrorCode::kInvalidArgument, "is for layer 8 but the base has 8 layers");
}

TEST_F(LoraMalformed, ShapesThatDoNotMatchTheBase) {
  // A for a hidden size of 32 instead of 64.
  tensors_[kQA] = Tensor{DType::kF32, {4, 32}, std::vector<uint8_t>(4 * 32 * 4)};
  ExpectError(Write(), ErrorCode::kInvalidArgument, std::string("tensor '") + kQA + "' has shape [4, 32], expected [4, 64]");
  SetUp();
  // B of the rank 8 when the config says 4.
  tensors_[kQB] = Tensor{DType::kF32, {128, 8}, std::vector<uint8_t>(128 * 8 * 4)};
  ExpectError(Write(), ErrorCode::kInvalidArgument, std::string("tensor '") + kQB + "' has shape [128, 8], expected [128, 4]");
  SetUp();
  tensors_.erase(kQB);
  ExpectError(Write(), ErrorCode::kInvalidArgument, "q_proj.lora_B.weight' is missing");
}

TEST_F(LoraMalformed, TypesOtherThanFloatAreRefused) {
  // An adapter in float64: written by hand (the writer only writes fgemma's own types).
  ASSERT_TRUE(WriteStringToFile(dir_ + "/adapter_config.json", config_.dump()).ok());
  const std::string header = std::string("{\"") + kQA + "\":{\"dtype\":\"F64\",\"shape\":[4,64],\"data_offsets\":[0,2048]}}";
  std::string file(8, '\0');
  const uint64_t length = header.size();  // 64-bit: shifting a 32-bit size_t by 32 or more is undefined
  for (int i = 0; i < 8; ++i) file[static_cast<size_t>(i)] = static_cast<char>(length >> (8 * i));
  file += header + std::string(2048, '\0');
  ASSERT_TRUE(WriteStringToFile(dir_ + "/adapter_model.safetensors", file).ok());
  const Status st = Load();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("F64"), std::string::npos) << st.ToString();
}

TEST_F(LoraMalformed, AnAdapterOfAnotherBaseIsRefused) {
  // The tiny-gqa adapter (all seven projections, kv_dim 64) against tiny-mqa (kv_dim 32).
  auto st = LoraAdapter::Load(test::FixturePath("lora/tiny-gqa-lora-s11"), model_->config()).status();
  ExpectError(st, ErrorCode::kInvalidArgument, "q_proj.lora_A.weight' has shape [8, 96], expected [8, 64]");
}

TEST_F(LoraMalformed, TruncatedAndCorruptFiles) {
  ASSERT_TRUE(Write().ok());
  const std::string path = dir_ + "/adapter_model.safetensors";
  std::string bytes = ReadFileToString(path).value();
  ASSERT_TRUE(WriteStringToFile(path, bytes.substr(0, bytes.size() - 100)).ok());
  Status st = Load();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("adapter_model.safetensors"), std::string::npos) << st.ToString();
  ASSERT_TRUE(WriteStringToFile(path, bytes.substr(0, 5)).ok());
  st = Load();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("adapter_model.safetensors"), std::string::npos) << st.ToString();
  ASSERT_TRUE(WriteStringToFile(path, bytes).ok());
  ASSERT_TRUE(WriteStringToFile(dir_ + "/adapter_config.json", "{\"r\": 4,").ok());
  st = Load();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("adapter_config.json"), std::string::npos) << st.ToString();
}

TEST_F(LoraMalformed, HalfPrecisionTensorsLoad) {
  // The same adapter stored as bf16 loads and changes the output (f16/bf16 are PEFT's other dtypes).
  for (auto& [name, t] : tensors_) {
    const size_t n = t.bytes.size() / 4;
    std::vector<float> f(n);
    std::memcpy(f.data(), t.bytes.data(), n * 4);
    t.bytes.resize(n * 2);
    ConvertRowBf16(f.data(), n, t.bytes.data());
    t.dtype = DType::kBF16;
  }
  EXPECT_TRUE(Write().ok());
}

}  // namespace
}  // namespace fgemma
