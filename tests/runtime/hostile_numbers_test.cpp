// Issue #30, finding 7: numbers no run can honour. At 3576020 a FunctionCaller made 2,000 threads
// (or hung on 2^31-1), a context of 0 refused every call later, a catalog cache whose payload held
// a NaN (checksum recomputed) was restored and every call failed "head chose a token outside the
// allowed set", and adapters with NaN weights, lora_alpha 1e308 or a scale of 1e30 loaded and then
// failed as "token id 2147483647 outside the vocabulary". Each is now refused where it enters, with
// the field named (the cache is rebuilt).
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "constrained_support.h"
#include "model/lora_adapter.h"
#include "runtime/function_caller.h"
#include "util/hash.h"
#include "util/mapped_file.h"
#include "util/run_limits.h"

namespace fgemma::hostile_numbers_test {
namespace {

ChatRequest SmartHome(const std::string& utterance) {
  OrderedJson tools =
      ParseOrderedJson(ReadFileToString(test::FixturePath("chat/smart-home-tools.json")).value(), "tools").value();
  return test::MakeRequest(tools, utterance);
}

Result<std::unique_ptr<FunctionCaller>> NewCaller(FunctionCallerOptions o) {
  auto loaded = LoadedModel::FromParts(test::ConstrainedWorld::Get().model, test::ConstrainedWorld::Get().tokenizer);
  if (!loaded.ok()) return loaded.status();
  return FunctionCaller::Create(loaded.value(), o);
}

void ExpectRefused(const Status& st, ErrorCode code, const std::string& words) {
  EXPECT_EQ(st.code(), code) << st.ToString();
  EXPECT_NE(st.message().find(words), std::string::npos) << st.ToString();
}

TEST(HostileNumbers, ThreadCountsBeyondTheLimitAreRefusedBeforeAnyThreadStarts) {
  const int pools = ThreadPool::LivePools();
  for (int threads : {2000, std::numeric_limits<int>::max(), -1}) {
    FunctionCallerOptions o;
    o.threads = threads;
    auto c = NewCaller(o);
    ASSERT_FALSE(c.ok()) << threads;
    const ErrorCode code = threads < 0 ? ErrorCode::kInvalidArgument : ErrorCode::kOutOfRange;
    ExpectRefused(c.status(), code, "threads: " + std::to_string(threads));
    SessionOptions so;
    so.threads = threads;
    auto s = Session::Create(test::ConstrainedWorld::Get().model, so);
    ASSERT_FALSE(s.ok());
    ExpectRefused(s.status(), code, "0 (all cores) to 256");
  }
  EXPECT_EQ(ThreadPool::LivePools(), pools);
  EXPECT_TRUE(CheckThreadCount(kMaxThreads, "t").ok());
  EXPECT_TRUE(CheckThreadCount(0, "t").ok());
}

TEST(HostileNumbers, ContextZeroOrPastTheModelIsRefusedWhenTheCallerIsMade) {
  FunctionCallerOptions o;
  o.threads = 1;
  o.context = 0;
  auto zero = NewCaller(o);
  ASSERT_FALSE(zero.ok());
  ExpectRefused(zero.status(), ErrorCode::kInvalidArgument, "context: 0 positions");
  o.context = 1'000'000;
  auto past = NewCaller(o);
  ASSERT_FALSE(past.ok());
  ExpectRefused(past.status(), ErrorCode::kInvalidArgument, "max_position_embeddings");
}

TEST(HostileNumbers, TimeBudgetsAndScalesMustBeFiniteAndSane) {
  for (double ms : {std::nan(""), HUGE_VAL, -HUGE_VAL}) ExpectRefused(CheckTimeBudgetMs(ms, "budget"), ErrorCode::kInvalidArgument, "budget");
  ExpectRefused(CheckTimeBudgetMs(-1, "budget"), ErrorCode::kOutOfRange, "budget");
  ExpectRefused(CheckTimeBudgetMs(1e12, "budget"), ErrorCode::kOutOfRange, "one day");
  EXPECT_TRUE(CheckTimeBudgetMs(0, "budget").ok());
  EXPECT_TRUE(CheckTimeBudgetMs(kMaxTimeBudgetMs, "budget").ok());
  ExpectRefused(CheckLoraScale(std::nan(""), "scale"), ErrorCode::kInvalidArgument, "not a finite number");
  ExpectRefused(CheckLoraScale(1e30, "scale"), ErrorCode::kOutOfRange, "beyond");
  EXPECT_TRUE(CheckLoraScale(-kMaxLoraScale, "scale").ok());
}

// A catalog cache whose checksum holds but whose payload is no state the model computes.
TEST(HostileNumbers, CatalogCacheWithNonFinitePayloadIsRejectedAndRebuilt) {
  const std::string cache = test::TempDir() + "/catalog.kv";
  const ChatRequest req = SmartHome("turn on the kitchen lights");
  const ToolChoice required{ToolChoiceMode::kRequired, ""};
  FunctionCallerOptions o;
  o.threads = 2;
  o.context = 2048;
  o.cache_path = cache;
  std::vector<int32_t> reference;
  {
    auto c = NewCaller(o).value();
    reference = c->Call({req, required}).value().output_tokens;
  }
  const std::string good = ReadFileToString(cache).value();
  constexpr size_t kHeaderBytes = 68, kChecksumAt = 52;
  ASSERT_GT(good.size(), kHeaderBytes + 64);
  for (float poison : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 1e30f}) {
    std::string bad = good;
    const size_t at = kHeaderBytes + ((good.size() - kHeaderBytes) / 2 & ~size_t{3});
    std::memcpy(bad.data() + at, &poison, sizeof(poison));
    const uint64_t checksum = Hash64(std::string_view(bad).substr(kHeaderBytes));
    std::memcpy(bad.data() + kChecksumAt, &checksum, sizeof(checksum));  // little-endian hosts
    ASSERT_TRUE(WriteStringToFile(cache, bad).ok());
    auto c = NewCaller(o).value();
    auto out = c->Call({req, required});
    ASSERT_TRUE(out.ok()) << poison << ": " << out.status().ToString();
    EXPECT_EQ(out->timing.cache_source.rfind("built (file rejected: ", 0), 0u) << out->timing.cache_source;
    EXPECT_NE(out->timing.cache_source.find("non-finite or absurd value"), std::string::npos) << out->timing.cache_source;
    EXPECT_EQ(out->output_tokens, reference);
    EXPECT_EQ(ReadFileToString(cache).value(), good);  // rebuilt
  }
}

// A copy of the mini adapter fixture, writable, to spoil one number of.
class HostileAdapter : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::TempDir() + "/adapter";
    namespace fs = std::filesystem;
    fs::create_directories(dir_);
    for (const char* f : {"adapter_config.json", "adapter_model.safetensors"}) {
      fs::copy_file(test::FixturePath(std::string("lora/mini-lora-s14/") + f), dir_ + "/" + f,
                    fs::copy_options::overwrite_existing);
      fs::permissions(dir_ + "/" + f, fs::perms::owner_write, fs::perm_options::add);
    }
  }
  Status Load(float scale = 1.0f) {
    return LoraAdapter::Load(dir_, test::ConstrainedWorld::Get().model->config(), scale).status();
  }
  // Writes `value` (F32) over element `index` of the first tensor whose name holds `which`.
  void PoisonWeight(float value, size_t index, const std::string& which = "lora_A") {
    std::string file = ReadFileToString(dir_ + "/adapter_model.safetensors").value();
    uint64_t header = 0;
    std::memcpy(&header, file.data(), 8);
    const Json j = Json::parse(file.substr(8, header));
    for (const auto& [name, info] : j.items()) {
      if (name.find(which) == std::string::npos) continue;
      ASSERT_EQ(info["dtype"], "F32");
      const size_t at = 8 + header + info["data_offsets"][0].get<size_t>() + 4 * index;
      std::memcpy(file.data() + at, &value, 4);
      poisoned_ = name;
      break;
    }
    ASSERT_TRUE(WriteStringToFile(dir_ + "/adapter_model.safetensors", file).ok());
  }
  std::string dir_, poisoned_;
};

TEST_F(HostileAdapter, TheFixtureLoads) { EXPECT_TRUE(Load().ok()) << Load().ToString(); }

TEST_F(HostileAdapter, NonFiniteWeightsAreRefusedNamingTheTensorAndPlace) {
  for (float v : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
    PoisonWeight(v, 5, "lora_B");
    const Status st = Load();
    ExpectRefused(st, ErrorCode::kInvalidArgument, "'" + poisoned_ + "' holds a non-finite value");
    EXPECT_NE(st.message().find("at [0, 5]"), std::string::npos) << st.ToString();  // B: [out, 16]
  }
}

TEST_F(HostileAdapter, HugeWeightsThatOverflowWithTheScaleAreRefused) {
  PoisonWeight(3e38f, 0, "lora_B");  // finite, but times (alpha / r = 2) x 500 it is inf
  ExpectRefused(Load(500.0f), ErrorCode::kInvalidArgument, "'" + poisoned_ + "' times the scale 1000");
}

TEST_F(HostileAdapter, AbsurdAlphaOrScaleIsRefused) {
  ExpectRefused(Load(1e30f), ErrorCode::kOutOfRange, "LoRA scale: 1e+30 is beyond");
  ExpectRefused(Load(std::nanf("")), ErrorCode::kInvalidArgument, "LoRA scale: nan is not a finite number");
  ExpectRefused(Load(600.0f), ErrorCode::kOutOfRange, "(lora_alpha / r) x scale");  // 2 x 600
  std::string config = ReadFileToString(dir_ + "/adapter_config.json").value();
  const size_t at = config.find("32.0");
  ASSERT_NE(at, std::string::npos);
  ASSERT_TRUE(WriteStringToFile(dir_ + "/adapter_config.json", config.replace(at, 4, "1e308")).ok());
  ExpectRefused(Load(), ErrorCode::kInvalidArgument, "lora_alpha / r");
}

}  // namespace
}  // namespace fgemma::hostile_numbers_test
