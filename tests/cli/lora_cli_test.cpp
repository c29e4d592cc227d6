// LoRA through the CLI (--lora on score, generate, bench, call, convert) and the merged path
// (the adapter added into the weights, then loaded) against the reference goldens.
#include <gtest/gtest.h>

#include <cmath>

#include "golden_sparse.h"
#include "model/lora_adapter.h"
#include "runtime/session.h"
#include "test_support.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

Json LoraGolden(const std::string& name) { return ReadJsonFile(test::FixturePath("lora/" + name)).value(); }

// Merges the adapter into a copy of every adapted projection (AddLoraRow, what convert --lora
// does) and assembles a model from it: the merged path for checkpoints without a tokenizer.
TEST(LoraMerged, TinyMergedWeightsMatchTheReference) {
  for (auto [base, adapter, golden_name] :
       {std::tuple{"tiny-gqa-f32", "tiny-gqa-lora-s11", "golden-tiny-gqa-f32-lora-s11.json"},
        std::tuple{"tiny-mqa-f32", "tiny-mqa-lora-s13-rslora-qv", "golden-tiny-mqa-f32-lora-s13.json"}}) {
    SCOPED_TRACE(base);
    auto src = std::shared_ptr<const Model>(
        Model::Load(test::FixturePath(std::string("models/") + base), ModelLoadOptions{.prepare_for_kernels = false}).value());
    auto lora = LoraAdapter::Load(test::FixturePath(std::string("lora/") + adapter), src->config()).value();
    auto merged_store = std::make_shared<std::vector<std::vector<float>>>();
    merged_store->reserve(1000);
    auto lookup = [&](const TensorSpec& spec) -> Result<TensorView> {
      if (const std::vector<float>* norm = src->Norm(spec)) return TensorView{DType::kF32, 1, norm->size(), norm->data()};
      const TensorView* m = src->Matrix(spec);
      const LoraProjection* p = lora->ForTensor(spec);
      if (p == nullptr) return *m;
      auto& rows = merged_store->emplace_back(m->rows * m->cols);
      for (size_t r = 0; r < m->rows; ++r) {
        DequantizeRow(*m, r, rows.data() + r * m->cols);
        AddLoraRow(*p, r, rows.data() + r * m->cols);
      }
      return TensorView{DType::kF32, m->rows, m->cols, rows.data()};
    };
    auto merged = std::shared_ptr<const Model>(
        Model::Assemble(src->config(), lookup, /*norms_have_unit_offset=*/true, merged_store, "merged").value());
    const Json golden = LoraGolden(golden_name);
    std::vector<int32_t> tokens;
    for (auto& t : golden["tokens"]) tokens.push_back(t.get<int32_t>());
    SessionOptions o;
    o.context = 64;
    o.threads = 2;
    auto s = Session::Create(merged, o).value();
    std::vector<std::vector<float>> logits(tokens.size(), std::vector<float>(512));
    std::vector<HeadRequest> heads(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) heads[i].index = i, heads[i].logits = logits[i].data();
    ASSERT_TRUE(s->Evaluate(tokens, heads).ok());
    double worst = 0;
    for (size_t p = 0; p < tokens.size(); ++p) {
      for (size_t v = 0; v < 512; ++v) worst = std::max(worst, std::abs(logits[p][v] - golden["logits"][p][v].get<double>()));
    }
    EXPECT_LT(worst, 1e-4);
  }
}

TEST(LoraCli, ScoreAndGenerateWithAnAdapterMatchTheReference) {
  const Json golden = LoraGolden("golden-tiny-gqa-f32-lora-s11.json");
  const std::string dir = test::TempDir(), model = test::FixturePath("models/tiny-gqa-f32"),
                    lora = test::FixturePath("lora/tiny-gqa-lora-s11");
  ASSERT_TRUE(WriteStringToFile(dir + "/ids.json", golden["tokens"].dump()).ok());
  std::string out;
  ASSERT_EQ(test::RunCommand(test::CliPath() + " score --model " + model + " --lora " + lora + " --ids " + dir +
                                 "/ids.json --positions 39 --top 5",
                             &out),
            0)
      << out;
  const Json line = Json::parse(out);
  for (const auto& e : line["top"]) EXPECT_NEAR(e[1].get<double>(), golden["logits"][39][e[0].get<size_t>()].get<double>(), 1e-4);

  std::string ids;
  for (auto& t : golden["greedy"]["prompt"]) ids += std::to_string(t.get<int>()) + " ";
  ASSERT_TRUE(WriteStringToFile(dir + "/prompt.txt", ids).ok());
  out.clear();  // RunCommand appends
  ASSERT_EQ(test::RunCommand(test::CliPath() + " generate --model " + model + " --lora " + lora + " --ids " + dir +
                                 "/prompt.txt --max-new " + std::to_string(golden["greedy"]["tokens"].size()),
                             &out),
            0);
  EXPECT_EQ(Json::parse(out), golden["greedy"]["tokens"]);

  // DIR:0 is the base: its logits differ from the adapter's.
  out.clear();
  ASSERT_EQ(test::RunCommand(test::CliPath() + " score --model " + model + " --lora " + lora + ":0 --ids " + dir +
                                 "/ids.json --positions 39 --top 1",
                             &out),
            0);
  const Json base = Json::parse(out);
  EXPECT_GT(std::abs(base["top"][0][1].get<double>() - golden["logits"][39][base["top"][0][0].get<size_t>()].get<double>()), 1e-3);
}

TEST(LoraCli, BadAdaptersAreClearErrors) {
  const std::string model = test::FixturePath("models/tiny-mqa-f32");
  const std::string dir = test::TempDir();
  ASSERT_TRUE(WriteStringToFile(dir + "/ids.txt", "2 3 4").ok());
  std::string out;
  EXPECT_EQ(test::RunCommand(test::CliPath() + " score --model " + model + " --lora " + dir + "/none --ids " + dir + "/ids.txt 2>&1", &out), 1);
  EXPECT_NE(out.find(dir + "/none"), std::string::npos) << out;
  out.clear();
  // The tiny-gqa adapter on tiny-mqa: a shape error naming the tensor.
  EXPECT_EQ(test::RunCommand(test::CliPath() + " generate --model " + model + " --lora " + test::FixturePath("lora/tiny-gqa-lora-s11") +
                                 " --ids " + dir + "/ids.txt 2>&1",
                             &out),
            1);
  EXPECT_NE(out.find("q_proj.lora_A.weight' has shape"), std::string::npos) << out;
}

TEST(LoraCli, BenchNamesTheAdapter) {
  std::string out;
  ASSERT_EQ(test::RunCommand(test::CliPath() + " bench --model " + test::FixturePath("models/tiny-gqa-f32") + " --lora " +
                                 test::FixturePath("lora/tiny-gqa-lora-s11") +
                                 " --threads 1 --prefill 16 --decode-contexts 16 --decode-steps 4 --repetitions 1 --json",
                             &out),
            0)
      << out;
  const Json j = Json::parse(out);
  EXPECT_EQ(j["lora"]["rank"], 8);
  EXPECT_FLOAT_EQ(j["lora"]["scale"].get<float>(), 2.0f);
}

// convert --lora merges before writing: the f32 file's logits match the merged reference, a q8_0
// file stays within q8_0's own error, and calls through it give valid output.
TEST(LoraCli, ConvertMergesTheAdapter) {
  const std::string dir = test::TempDir();
  const std::string lora = test::FixturePath("lora/mini-lora-s14");
  std::string out;
  for (const char* type : {"f32", "q8_0"}) {
    ASSERT_EQ(test::RunCommand(test::CliPath() + " convert --model " + test::FixturePath("models/mini-bf16") + " --lora " + lora +
                                   " --type " + type + " --out " + dir + "/merged-" + type + ".gguf",
                               &out),
              0)
        << out;
  }
  auto f32 = std::shared_ptr<const Model>(Model::Load(dir + "/merged-f32.gguf").value());
  test::CheckSparseGolden(f32, LoraGolden("golden-mini-bf16-lora-s14.json"), 2e-3, 2);

  // The merged q8_0 file and the run-time adapter over the q8_0 base: both within q8_0's error
  // of the merged reference (checked on the golden's top-10 ids at its positions).
  const Json golden = LoraGolden("golden-mini-bf16-lora-s14.json");
  auto q = std::shared_ptr<const Model>(Model::Load(dir + "/merged-q8_0.gguf").value());
  std::vector<int32_t> tokens;
  for (auto& t : golden["tokens"]) tokens.push_back(t.get<int32_t>());
  SessionOptions o;
  o.context = 128;
  o.threads = 2;
  auto s = Session::Create(q, o).value();
  std::vector<std::vector<float>> rows(golden["positions"].size(), std::vector<float>(262144));
  std::vector<HeadRequest> heads(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) heads[i].index = golden["positions"][i].get<size_t>(), heads[i].logits = rows[i].data();
  ASSERT_TRUE(s->Evaluate(tokens, heads).ok());
  double worst = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    for (const auto& e : golden["top10"][i]) worst = std::max(worst, std::abs(rows[i][e[0].get<size_t>()] - e[1].get<double>()));
  }
  EXPECT_LT(worst, 0.4) << "merged q8_0 vs the float reference (q8_0 alone: ~0.23 on the base)";

  // A bad adapter fails before anything is written.
  EXPECT_EQ(test::RunCommand(test::CliPath() + " convert --model " + test::FixturePath("models/mini-bf16") + " --lora " +
                                 test::FixturePath("lora/tiny-gqa-lora-s11") + " --type q8_0 --out " + dir + "/bad.gguf 2>&1",
                             &out),
            1);
  EXPECT_NE(out.find("has shape"), std::string::npos) << out;
  EXPECT_FALSE(FileExists(dir + "/bad.gguf"));
}

TEST(LoraCli, CallWithAnAdapterAndCache) {
  const std::string dir = test::TempDir();
  const std::string call = test::CliPath() + " call --model " + test::FixturePath("models/mini-bf16") + " --tools " +
                           test::FixturePath("chat/smart-home-tools.json") + " --threads 2 --tool-choice required --lora " +
                           test::FixturePath("lora/mini-lora-s14") + " --cache " + dir + "/c.kv 'turn on the kitchen lights'";
  std::string first, second;
  ASSERT_EQ(test::RunCommand(call, &first), 0) << first;
  ASSERT_EQ(test::RunCommand(call, &second), 0) << second;
  const Json a = Json::parse(first), b = Json::parse(second);
  EXPECT_EQ(a["calls"], b["calls"]);
  EXPECT_EQ(b["timing"]["cache"], "file") << second;
}

}  // namespace
}  // namespace fgemma

namespace fgemma {
namespace {

// synth --lora-rank writes an adapter the loader accepts, for all seven projections.
TEST(LoraCli, SynthWritesAnAdapter) {
  const std::string dir = test::TempDir();
  std::string out;
  ASSERT_EQ(test::RunCommand(test::CliPath() + " synth --config tiny-gqa --seed 4 --lora-rank 16 --out " + dir + "/a", &out), 0) << out;
  auto model = Model::Load(test::FixturePath("models/tiny-gqa-f32")).value();
  auto lora = LoraAdapter::Load(dir + "/a", model->config());
  ASSERT_TRUE(lora.ok()) << lora.status().ToString();
  EXPECT_EQ(lora.value()->rank(), 16u);
  EXPECT_EQ(lora.value()->target_modules().size(), 7u);
  for (size_t i = 0; i < 7; ++i) EXPECT_FALSE(lora.value()->projection(3, i).empty());
}

}  // namespace
}  // namespace fgemma
