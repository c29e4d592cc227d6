// Model metadata that parses but makes no sense (issue 16, finding 10): a NaN or negative epsilon
// loaded and gave NaN logits; block_count 2^32-1 escaped as "cannot create std::vector larger than
// max_size()". Each is now refused at load with an error naming the key as the file spells it.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "io/gguf.h"
#include "io/gguf_keys.h"
#include "io/gguf_writer.h"
#include "model/config.h"
#include "model/model.h"
#include "model/model_gguf.h"
#include "test_support.h"

namespace fgemma {
namespace {

// The mini GGUF fixture rewritten with `key` replaced by what `put` adds (or added when absent).
// Only token_embd.weight is copied unless `all_tensors` (ConfigFromGguf needs no other tensor).
std::string MiniWith(const std::string& name, std::string_view key, const std::function<Status(GgufWriter&)>& put,
                     bool all_tensors = false) {
  auto src = GgufFile::Open(test::FixturePath("models/mini-q8_0.gguf"));
  EXPECT_TRUE(src.ok()) << src.status().ToString();
  const std::string path = test::TempDir() + "/" + name + ".gguf";
  auto w = GgufWriter::Create(path);
  EXPECT_TRUE(w.ok());
  for (const GgufKeyValue& kv : src->metadata()) {
    if (kv.key == key) continue;
    EXPECT_TRUE(w->AddValue(kv.key, kv.value).ok());
  }
  EXPECT_TRUE(put(*w).ok());
  std::vector<const GgufTensorInfo*> tensors;
  for (const GgufTensorInfo& t : src->tensors()) {
    if (all_tensors || t.name == "token_embd.weight") tensors.push_back(&t);
  }
  for (const GgufTensorInfo* t : tensors)
    EXPECT_TRUE(w->DeclareTensor(t->name, t->ggml_type, std::vector<uint64_t>(t->ne.begin(), t->ne.begin() + t->n_dims)).ok());
  for (const GgufTensorInfo* t : tensors) EXPECT_TRUE(w->WriteTensorData(t->name, src->TensorData(*t), t->n_bytes).ok());
  EXPECT_TRUE(w->Finish().ok());
  return path;
}

Status GgufConfigError(const std::string& path) {
  auto f = GgufFile::Open(path);
  if (!f.ok()) return f.status();
  auto c = ConfigFromGguf(*f);
  return c.ok() ? Status::Ok() : c.status();
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const std::string kEps(gguf_key::kRmsEpsilon.name);
const std::string kBlocks(gguf_key::kBlockCount.name);

TEST(HostileMetadata, NanEpsilonIsRefusedAtLoad) {
  // Through Model::Load on a file with every tensor: it used to load and give NaN logits.
  const std::string path = MiniWith("eps-nan", kEps, [](GgufWriter& w) {
    return w.AddF32(kEps, std::numeric_limits<float>::quiet_NaN());
  }, /*all_tensors=*/true);
  auto m = Model::Load(path);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(Contains(m.status().message(), "'" + kEps + "' must be a finite positive number")) << m.status().ToString();
}

TEST(HostileMetadata, NegativeZeroAndHugeEpsilonAreRefused) {
  for (float eps : {-1e-6f, 0.0f, std::numeric_limits<float>::infinity(), 5.0f}) {
    const std::string path = MiniWith("eps", kEps, [&](GgufWriter& w) { return w.AddF32(kEps, eps); });
    Status st = GgufConfigError(path);
    EXPECT_FALSE(st.ok()) << eps;
    EXPECT_TRUE(Contains(st.message(), "'" + kEps + "'")) << st.ToString();
  }
}

TEST(HostileMetadata, HugeBlockCountIsAClearError) {
  for (uint32_t blocks : {0xffffffffu, 0x7fffffffu, 1025u, 0u}) {
    const std::string path = MiniWith("blocks", kBlocks, [&](GgufWriter& w) { return w.AddU32(kBlocks, blocks); });
    Status st = GgufConfigError(path);
    ASSERT_FALSE(st.ok()) << blocks;
    EXPECT_TRUE(Contains(st.message(), kBlocks)) << st.ToString();
    EXPECT_FALSE(Contains(st.message(), "max_size")) << st.ToString();
  }
}

TEST(HostileMetadata, RopeBaseAndHeadCountsChecked) {
  const std::string rope(gguf_key::kRopeFreqBase.name);
  Status st = GgufConfigError(MiniWith("rope", rope, [&](GgufWriter& w) {
    return w.AddF32(rope, std::numeric_limits<float>::infinity());
  }));
  EXPECT_TRUE(Contains(st.message(), "'" + rope + "' must be a finite positive number")) << st.ToString();
  const std::string heads(gguf_key::kHeadCount.name);
  st = GgufConfigError(MiniWith("heads", heads, [&](GgufWriter& w) { return w.AddU32(heads, 1u << 20); }));
  EXPECT_TRUE(Contains(st.message(), "'" + heads + "' is 1048576, more than the limit of 1024")) << st.ToString();
  const std::string softcap(gguf_key::kFinalLogitSoftcap.name);
  st = GgufConfigError(MiniWith("softcap", softcap, [&](GgufWriter& w) { return w.AddF32(softcap, -30.0f); }));
  EXPECT_TRUE(Contains(st.message(), "'" + softcap + "'")) << st.ToString();
}

TEST(HostileMetadata, IntactMiniStillLoads) {
  EXPECT_TRUE(GgufConfigError(MiniWith("intact", "none", [](GgufWriter&) { return Status::Ok(); })).ok());
}

// The fuzz seeds of scripts/make_fuzz_seeds.py reach ModelConfig::Validate with the errors meant.
TEST(HostileMetadata, FuzzSeedsAreRefusedNamingTheKey) {
  const std::string dir = std::string(FGEMMA_SOURCE_DIR) + "/fuzz/corpus/gguf/";
  EXPECT_TRUE(GgufConfigError(dir + "config-valid.gguf").ok()) << GgufConfigError(dir + "config-valid.gguf").ToString();
  for (const char* name : {"config-eps-nan.gguf", "config-eps-negative.gguf"}) {
    Status st = GgufConfigError(dir + name);
    EXPECT_TRUE(Contains(st.message(), "'" + kEps + "' must be a finite positive number")) << name << ": " << st.ToString();
  }
  Status st = GgufConfigError(dir + "config-block-count-max.gguf");
  EXPECT_TRUE(Contains(st.message(), "'" + kBlocks + "': value 4294967295 is out of range")) << st.ToString();
}

Json MiniHfConfig() {
  auto c = ConfigByName("mini");
  EXPECT_TRUE(c.ok());
  return ConfigToHfJson(*c);
}

TEST(HostileMetadata, HfConfigNamesItsFields) {
  Json j = MiniHfConfig();
  j["rms_norm_eps"] = -1e-6;
  auto c = ConfigFromHfJson(j, "config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status().message(), "config.json: config field 'rms_norm_eps' must be a finite positive number"))
      << c.status().ToString();

  j = MiniHfConfig();
  j.erase("layer_types");
  j["num_hidden_layers"] = 2147483647;  // would size a 2 GB layer_kinds before Validate
  c = ConfigFromHfJson(j, "config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status().message(), "'num_hidden_layers' is 2147483647, more than the limit of 1024"))
      << c.status().ToString();

  j = MiniHfConfig();
  j["rope_theta"] = 1e300;  // inf as a float
  c = ConfigFromHfJson(j, "config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status().message(), "'rope_theta' must be a finite positive number")) << c.status().ToString();
}

}  // namespace
}  // namespace fgemma
