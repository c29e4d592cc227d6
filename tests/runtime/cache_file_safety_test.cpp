// The catalog cache file through FunctionCaller (issue 16, finding 6): a symlink planted at the old
// fixed `FILE.tmp` no longer redirects the write, a FIFO, directory, device or symlink at the cache
// path is refused when the caller is made (a FIFO used to hang the process in open), and callers
// writing one cache at once leave a cache the next caller loads.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <thread>

#include "constrained_support.h"
#include "runtime/function_caller.h"
#include "util/file_replace.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

namespace fs = std::filesystem;

class CacheFileSafety : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto loaded = LoadModel(test::FixturePath("models/mini-bf16"));
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    loaded_ = new LoadedModel(std::move(loaded).value());
  }
  static void TearDownTestSuite() {
    delete loaded_;
    loaded_ = nullptr;
  }
  static Result<std::unique_ptr<FunctionCaller>> NewCaller(const std::string& cache) {
    FunctionCallerOptions o;
    o.threads = 1;
    o.context = 2048;
    o.cache_path = cache;
    return FunctionCaller::Create(*loaded_, o);
  }
  static CallRequest Request() {
    OrderedJson tools =
        ParseOrderedJson(ReadFileToString(test::FixturePath("chat/smart-home-tools.json")).value(), "tools").value();
    CallRequest r{test::MakeRequest(tools, "turn on the kitchen lights please"), ToolChoice{ToolChoiceMode::kRequired, ""}};
    r.limits.max_tokens = 4;  // the prefix (and its cache) is what is tested, not the answer
    return r;
  }
  static LoadedModel* loaded_;
};
LoadedModel* CacheFileSafety::loaded_ = nullptr;

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST_F(CacheFileSafety, LinkAtTheOldTemporaryNameIsNotWrittenThrough) {
  const std::string dir = test::TempDir();
  ASSERT_TRUE(ReplaceFileContents(dir + "/victim", "precious").ok());
  fs::create_symlink(dir + "/victim", dir + "/c.kv.tmp");
  auto caller = NewCaller(dir + "/c.kv");
  ASSERT_TRUE(caller.ok()) << caller.status().ToString();
  auto out = (*caller)->Call(Request());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE((*caller)->TakeWarnings().empty());
  EXPECT_EQ(ReadFileToString(dir + "/victim").value(), "precious");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(dir + "/c.kv")));
  // The cache written is whole: a fresh caller loads it.
  auto again = NewCaller(dir + "/c.kv");
  ASSERT_TRUE(again.ok());
  auto hit = (*again)->Call(Request());
  ASSERT_TRUE(hit.ok());
  EXPECT_EQ(hit->timing.cache_source, "file");
}

TEST_F(CacheFileSafety, NonRegularCachePathsAreRefusedAtCreation) {
  const std::string dir = test::TempDir();
  const std::string fifo = dir + "/fifo.kv";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto started = std::chrono::steady_clock::now();
  auto done = std::async(std::launch::async, [&] { return NewCaller(fifo).status(); });
  if (done.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "FunctionCaller::Create blocked on a FIFO cache path";
    std::_Exit(1);
  }
  Status st = done.get();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(st.message(), "catalog cache: " + fifo + ": is a FIFO")) << st.ToString();

  fs::create_directory(dir + "/d.kv");
  st = NewCaller(dir + "/d.kv").status();
  EXPECT_TRUE(Contains(st.message(), dir + "/d.kv: is a directory")) << st.ToString();

  ASSERT_TRUE(ReplaceFileContents(dir + "/victim", "precious").ok());
  fs::create_symlink(dir + "/victim", dir + "/link.kv");
  st = NewCaller(dir + "/link.kv").status();
  EXPECT_TRUE(Contains(st.message(), dir + "/link.kv: is a symbolic link")) << st.ToString();
  EXPECT_EQ(ReadFileToString(dir + "/victim").value(), "precious");
}

TEST_F(CacheFileSafety, ConcurrentWritersLeaveAValidCache) {
  const std::string dir = test::TempDir();
  const std::string cache = dir + "/c.kv";
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&] {
      auto caller = NewCaller(cache);
      if (!caller.ok()) return;
      auto out = (*caller)->Call(Request());
      if (out.ok() && (*caller)->TakeWarnings().empty()) ++ok;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 3);
  auto caller = NewCaller(cache);
  ASSERT_TRUE(caller.ok());
  auto hit = (*caller)->Call(Request());
  ASSERT_TRUE(hit.ok()) << hit.status().ToString();
  EXPECT_EQ(hit->timing.cache_source, "file");
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1u);  // no temporary left behind
}

}  // namespace
}  // namespace fgemma
