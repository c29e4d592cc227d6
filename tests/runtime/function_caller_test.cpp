// FunctionCaller: the catalog cache (memory and file) changes no output, a warm request prefills
// only its own turn, and stale, foreign, corrupt or other-numerics cache files are rejected and
// rebuilt.
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "constrained_support.h"
#include "runtime/catalog_cache.h"
#include "runtime/function_caller.h"
#include "kernels/matmul.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

class FunctionCallerTest : public ::testing::Test {
 protected:
  std::unique_ptr<FunctionCaller> NewCaller(const std::string& model_path, const std::string& cache, int threads = 2,
                                            bool draft = true) {
    auto model = Model::Load(model_path);
    EXPECT_TRUE(model.ok()) << model.status().ToString();
    FunctionCallerOptions o;
    o.threads = threads;
    o.context = 2048;
    o.cache_path = cache;
    o.decoding.draft = draft;
    auto loaded = LoadedModel::FromParts(std::move(model).value(), test::ConstrainedWorld::Get().tokenizer);
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    auto c = FunctionCaller::Create(loaded.value(), o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(c).value();
  }
  ChatRequest SmartHome(const std::string& utterance) {
    OrderedJson tools = ParseOrderedJson(ReadFileToString(test::FixturePath("chat/smart-home-tools.json")).value(), "tools").value();
    return test::MakeRequest(tools, utterance);
  }
  const ToolChoice kRequired{ToolChoiceMode::kRequired, ""};
};

// The catalog and work sessions of a caller run on one thread pool: the process's pool of its
// thread count, not one pool per session.
TEST_F(FunctionCallerTest, HoldsOneThreadPool) {
  const int before = ThreadPool::LivePools();
  auto caller = NewCaller(test::FixturePath("models/mini-bf16"), "", 7);  // a count no other test keeps
  EXPECT_EQ(ThreadPool::LivePools(), before + 1);
  EXPECT_EQ(caller->pool().num_threads(), 7);
  EXPECT_EQ(&caller->pool(), SharedThreadPool(7).get());
  auto other = NewCaller(test::FixturePath("models/mini-bf16"), "", 7);
  EXPECT_EQ(&other->pool(), &caller->pool());
  EXPECT_EQ(ThreadPool::LivePools(), before + 1);
}

TEST_F(FunctionCallerTest, CacheInMemoryAndInFileChangesNothing) {
  const std::string cache = test::TempDir() + "/catalog.kv";
  const ChatRequest req = SmartHome("turn on the kitchen lights please");

  // Without drafts: a warm call drafts from the cold one's output, so the positions it evaluates
  // (a guessed last token is evaluated, a chosen one is not) would differ by the draft, not the cache.
  auto plain = NewCaller(test::FixturePath("models/mini-bf16"), "", 2, false);
  auto cold = plain->Call({req, kRequired}).value();
  auto warm = plain->Call({req, kRequired}).value();
  EXPECT_EQ(cold.timing.cache_source, "built");
  EXPECT_EQ(warm.timing.cache_source, "memory");
  EXPECT_EQ(cold.output_tokens, warm.output_tokens);
  EXPECT_TRUE(cold.parsed.ok()) << cold.parsed.ErrorSummary();
  ASSERT_FALSE(cold.parsed.calls.empty());
  // The warm request evaluates only its own turn (plus what it generates), not the catalog.
  EXPECT_GT(cold.timing.prefix_tokens, 800u);
  EXPECT_EQ(cold.timing.evaluated_tokens, warm.timing.evaluated_tokens + cold.timing.prefix_tokens);
  EXPECT_LT(warm.timing.evaluated_tokens, warm.timing.prompt_tokens + warm.timing.generated_tokens + 1);

  auto writer = NewCaller(test::FixturePath("models/mini-bf16"), cache, 2, false);
  auto first = writer->Call({req, kRequired}).value();
  EXPECT_EQ(first.timing.cache_source, "built");
  ASSERT_TRUE(FileExists(cache));
  auto reader = NewCaller(test::FixturePath("models/mini-bf16"), cache, 2, false);
  auto from_file = reader->Call({req, kRequired}).value();
  EXPECT_EQ(from_file.timing.cache_source, "file");
  EXPECT_TRUE(reader->TakeWarnings().empty());
  EXPECT_EQ(from_file.output_tokens, cold.output_tokens);
  EXPECT_EQ(from_file.timing.evaluated_tokens, warm.timing.evaluated_tokens);

  // A different utterance with the same catalog reuses the prefix too.
  auto other = reader->Call({SmartHome("set an alarm for seven"), kRequired}).value();
  EXPECT_EQ(other.timing.cache_source, "memory");
}

TEST_F(FunctionCallerTest, StaleForeignAndCorruptFilesAreRejectedAndRebuilt) {
  const std::string dir = test::TempDir();
  const std::string cache = dir + "/catalog.kv";
  const ChatRequest req = SmartHome("play some jazz in the living room");
  std::vector<int32_t> reference;
  {
    auto c = NewCaller(test::FixturePath("models/mini-bf16"), cache);
    reference = c->Call({req, kRequired}).value().output_tokens;
  }
  const std::string good = ReadFileToString(cache).value();
  auto expect_rebuilt = [&](const std::string& model_path, const ChatRequest& r, const std::string& why) -> CallOutcome {
    auto c = NewCaller(model_path, cache);
    auto result = c->Call({r, kRequired});
    EXPECT_TRUE(result.ok()) << why << ": " << result.status().ToString();
    if (!result.ok()) return CallOutcome{};
    auto out = std::move(result).value();
    EXPECT_EQ(out.timing.cache_source.rfind("built (file rejected: ", 0), 0u) << out.timing.cache_source;
    const auto warnings = c->TakeWarnings();
    EXPECT_EQ(warnings.size(), 1u);
    if (!warnings.empty()) EXPECT_NE(warnings[0].find(why), std::string::npos) << warnings[0];
    return out;
  };
  // Corrupt payload byte: checksum.
  std::string bad = good;
  bad[bad.size() / 2] ^= 0x5a;
  ASSERT_TRUE(WriteStringToFile(cache, bad).ok());
  EXPECT_EQ(expect_rebuilt(test::FixturePath("models/mini-bf16"), req, "checksum").output_tokens, reference);
  // Truncated.
  ASSERT_TRUE(WriteStringToFile(cache, good.substr(0, good.size() - 100)).ok());
  EXPECT_EQ(expect_rebuilt(test::FixturePath("models/mini-bf16"), req, "truncated").output_tokens, reference);
  // Not a cache at all.
  ASSERT_TRUE(WriteStringToFile(cache, "hello").ok());
  expect_rebuilt(test::FixturePath("models/mini-bf16"), req, "not an fgemma catalog cache");
  // Foreign model (same shape and tokenizer, other weights: the q8_0 GGUF).
  ASSERT_TRUE(WriteStringToFile(cache, good).ok());
  expect_rebuilt(test::FixturePath("models/mini-q8_0.gguf"), req, "different model");
  // Stale: another tool catalog.
  ASSERT_TRUE(WriteStringToFile(cache, good).ok());
  OrderedJson tools = ParseOrderedJson(ReadFileToString(test::FixturePath("chat/smart-home-tools-13.json")).value(), "t").value();
  expect_rebuilt(test::FixturePath("models/mini-bf16"), test::MakeRequest(tools, "hello"), "different tool catalog");
  // The rebuilt file is valid again.
  auto c = NewCaller(test::FixturePath("models/mini-bf16"), cache);
  EXPECT_EQ(c->Call({test::MakeRequest(tools, "hello"), kRequired}).value().timing.cache_source, "file");
}

// The thread count sets the row blocks of the forward pass's matrix products, which changes the
// last bits of the prefilled state; a file written with another thread count is therefore not
// restored (it would make a caller answer differently from one that prefills).
// Interleaved weight copies change the last bits of quantized results, so a cache file binds whether
// they were used (FGEMMA_INTERLEAVE=0 turns them off at load).
TEST(CatalogNumerics, KeyNamesTheWeightLayout) {
  const std::string path = test::FixturePath("models/mini-q8_0.gguf");
  auto interleaved = std::shared_ptr<const Model>(Model::Load(path).value());
  setenv("FGEMMA_INTERLEAVE", "0", 1);
  auto stored = std::shared_ptr<const Model>(Model::Load(path).value());
  unsetenv("FGEMMA_INTERLEAVE");
  SessionOptions so;
  so.context = 64;
  so.threads = 1;
  auto a = Session::Create(interleaved, so).value();
  auto b = Session::Create(stored, so).value();
  EXPECT_EQ(stored->repacked_bytes(), 0u);
  EXPECT_EQ(stored->weight_layout(), "");
  if (interleaved->repacked_bytes() == 0) GTEST_SKIP() << KernelTargetName() << " reads no interleaved copies";
  EXPECT_EQ(interleaved->weight_layout(), "interleaved");
  EXPECT_NE(CatalogNumericsKey(*a), CatalogNumericsKey(*b));
  EXPECT_EQ(CatalogNumericsKey(*a) & 0xffffffffu, CatalogNumericsKey(*b) & 0xffffffffu);  // same thread count
}

TEST_F(FunctionCallerTest, FileFromAnotherThreadCountIsRebuilt) {
  const std::string cache = test::TempDir() + "/catalog.kv";
  const ChatRequest req = SmartHome("turn off the bedroom lights");
  auto writer = NewCaller(test::FixturePath("models/mini-bf16"), cache, 2);
  ASSERT_EQ(writer->Call({req, kRequired}).value().timing.cache_source, "built");
  const std::string two_threads = ReadFileToString(cache).value();

  auto reader = NewCaller(test::FixturePath("models/mini-bf16"), cache, 1);
  auto out = reader->Call({req, kRequired}).value();
  EXPECT_EQ(out.timing.cache_source.rfind("built (file rejected: ", 0), 0u) << out.timing.cache_source;
  EXPECT_NE(out.timing.cache_source.find("built with 2 threads, this session uses 1"), std::string::npos)
      << out.timing.cache_source;
  // The rebuilt file is the one-thread state: a one-thread caller restores it and answers alike.
  const std::string one_thread = ReadFileToString(cache).value();
  auto again = NewCaller(test::FixturePath("models/mini-bf16"), cache, 1)->Call({req, kRequired}).value();
  EXPECT_EQ(again.timing.cache_source, "file");
  EXPECT_EQ(again.output_tokens, out.output_tokens);
  // For the record: how many bytes of the state the thread count changed (mini: most of them).
  size_t differ = 0;
  for (size_t i = 0; i < std::min(one_thread.size(), two_threads.size()); ++i) differ += one_thread[i] != two_threads[i];
  std::printf("[ cache ] 1- vs 2-thread catalog state: %zu of %zu bytes differ\n", differ, one_thread.size());
}

}  // namespace
}  // namespace fgemma
