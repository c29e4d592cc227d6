// Finer C API checks than capi_flow.c: cross-thread cancellation, buffer edge cases, status mapping.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "fgemma/fgemma.h"
#include "kernels/matmul.h"
#include "mini_model_capi_fixture.h"

namespace {

const char* kMessages =
    R"([{"role":"developer","content":"You are a model that can do function calling with the following functions"},)"
    R"({"role":"user","content":"Turn on the kitchen lights"}])";

class CapiTest : public fgemma::test::MiniModelCapiTest {
 protected:
  static fgemma_caller* NewCaller(fgemma_caller_params p = fgemma_caller_default_params()) {
    p.n_ctx = 2048;
    p.n_threads = 1;
    fgemma_caller* c = nullptr;
    EXPECT_EQ(fgemma_caller_new(model_, p, &c), FGEMMA_OK) << fgemma_last_error();
    return c;
  }
};

TEST(CapiBasics, VersionAndStatusNames) {
  EXPECT_EQ(fgemma_abi_version(), FGEMMA_ABI_VERSION);
  EXPECT_STREQ(fgemma_status_name(FGEMMA_ERR_BUDGET), "budget exhausted");
  EXPECT_STREQ(fgemma_status_name(static_cast<fgemma_status>(99)), "unknown status");
  // The kernels chosen for this CPU, as `fgemma bench` and `fgemma --version` print them.
  EXPECT_STREQ(fgemma_kernel_target(), fgemma::KernelTargetName());
  EXPECT_GT(std::strlen(fgemma_kernel_target()), 0u);
}

TEST(CapiBasics, MissingModelIsNotFoundWithMessage) {
  fgemma_model* m = nullptr;
  EXPECT_EQ(fgemma_model_load("/nonexistent/dir", fgemma_model_default_params(), &m), FGEMMA_ERR_NOT_FOUND);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(std::string(fgemma_last_error()).find("/nonexistent/dir"), std::string::npos);
}

TEST(CapiBasics, LastErrorIsPerThread) {
  fgemma_model* m = nullptr;
  ASSERT_NE(fgemma_model_load(nullptr, fgemma_model_default_params(), &m), FGEMMA_OK);
  std::string other;
  std::thread([&] { other = fgemma_last_error(); }).join();
  EXPECT_EQ(other, "");
  EXPECT_NE(std::string(fgemma_last_error()), "");
}

TEST_F(CapiTest, TokenBufferTooSmallReportsNeed) {
  int32_t ids[2] = {-7, -7};
  const std::string text = "one two three four five";
  const int64_t need = fgemma_tokenize(model_, text.data(), text.size(), true, false, ids, 2);
  ASSERT_GT(need, 2);
  EXPECT_EQ(ids[0], fgemma_model_bos(model_));
  EXPECT_NE(ids[1], -7);
  // Zero-length text is valid: only BOS.
  EXPECT_EQ(fgemma_tokenize(model_, nullptr, 0, true, false, ids, 2), 1);
}

TEST_F(CapiTest, CancelFromAnotherThread) {
  fgemma_caller* c = NewCaller();
  struct State {
    fgemma_caller* caller;
    std::atomic<int> tokens{0};
  } state{c};
  // The callback is slowed down so the other thread's cancel lands mid-call.
  auto slow = [](int32_t, const char*, size_t, void* user) -> int {
    static_cast<State*>(user)->tokens++;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return 0;
  };
  std::thread canceller([&] {
    while (state.tokens.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(fgemma_caller_cancel(c), FGEMMA_OK);
  });
  EXPECT_EQ(fgemma_caller_call(c, tools_->c_str(), kMessages, "required", slow, &state), FGEMMA_ERR_CANCELLED);
  canceller.join();
  EXPECT_LE(state.tokens.load(), 4);
  // The cancel was consumed: the next call runs.
  EXPECT_EQ(fgemma_caller_call(c, tools_->c_str(), kMessages, "required", nullptr, nullptr), FGEMMA_OK);
  fgemma_caller_free(c);
}

TEST_F(CapiTest, NamedToolChoiceAsJsonObject) {
  fgemma_caller* c = NewCaller();
  ASSERT_EQ(fgemma_caller_call(c, tools_->c_str(), kMessages, R"({"type":"function","function":{"name":"set_lights"}})",
                               nullptr, nullptr),
            FGEMMA_OK)
      << fgemma_last_error();
  std::string json(static_cast<size_t>(fgemma_caller_result_json(c, nullptr, 0)), '\0');
  fgemma_caller_result_json(c, json.data(), json.size() + 1);
  auto j = fgemma::Json::parse(json);
  ASSERT_EQ(j["calls"].size(), 1u);
  EXPECT_EQ(j["calls"][0]["name"], "set_lights");
  EXPECT_EQ(j["finish_reason"], "tool_calls");  // the outcome says why it ended, as the server does
  fgemma_caller_free(c);
}

TEST_F(CapiTest, ModelOutlivesNothingButIsShared) {
  // Many callers over one model, used from different threads at once.
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&] {
      fgemma_caller* c = NewCaller();
      if (fgemma_caller_call(c, tools_->c_str(), kMessages, "required", nullptr, nullptr) == FGEMMA_OK) ok++;
      fgemma_caller_free(c);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 2);
}

// Issue 14: drafts are on by default and change no output; the timing reports passes, drafted
// and accepted tokens (two warm calls: the second drafts from the first's output).
TEST_F(CapiTest, DraftsOnByDefaultChangeNothing) {
  EXPECT_TRUE(fgemma_caller_default_params().draft);
  auto result = [](fgemma_caller* c) {
    std::string json(static_cast<size_t>(fgemma_caller_result_json(c, nullptr, 0)), '\0');
    fgemma_caller_result_json(c, json.data(), json.size() + 1);
    return fgemma::Json::parse(json);
  };
  fgemma_caller_params off = fgemma_caller_default_params();
  off.draft = false;
  fgemma_caller* with = NewCaller();
  fgemma_caller* without = NewCaller(off);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(fgemma_caller_call(with, tools_->c_str(), kMessages, "required", nullptr, nullptr), FGEMMA_OK);
    ASSERT_EQ(fgemma_caller_call(without, tools_->c_str(), kMessages, "required", nullptr, nullptr), FGEMMA_OK);
    const fgemma::Json a = result(with), b = result(without);
    EXPECT_EQ(a["calls"], b["calls"]);
    EXPECT_EQ(a["text"], b["text"]);
    EXPECT_EQ(b["timing"]["drafted_tokens"], 0);
    EXPECT_LE(a["timing"]["passes"].get<size_t>(), b["timing"]["passes"].get<size_t>());
    if (i == 1) EXPECT_GT(a["timing"]["accepted_tokens"].get<size_t>(), 0u) << a.dump();
  }
  fgemma_caller_free(with);
  fgemma_caller_free(without);
}

// Issue 16, finding 6: a cache path that is a device is refused when the caller is made; as root
// the old writer replaced /dev/null with a regular file.
TEST_F(CapiTest, DeviceCachePathIsRefusedAndLeftAlone) {
  fgemma_caller_params p = fgemma_caller_default_params();
  p.cache_path = "/dev/null";
  p.n_ctx = 2048;
  p.n_threads = 1;
  fgemma_caller* c = nullptr;
  EXPECT_EQ(fgemma_caller_new(model_, p, &c), FGEMMA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c, nullptr);
  EXPECT_NE(std::string(fgemma_last_error()).find("/dev/null: is a character device"), std::string::npos) << fgemma_last_error();
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

// Issue 16, finding 3, through the C API: the tool count is checked before the tools are parsed, and
// max_tokens beyond the context is refused.
TEST_F(CapiTest, RequestLimits) {
  fgemma_caller* c = NewCaller();
  std::string tools = "[";
  for (int i = 0; i < 100000; ++i) tools += std::string(i ? "," : "") + R"({"type":"function","function":{"name":"f"}})";
  tools += "]";
  EXPECT_EQ(fgemma_caller_call(c, tools.c_str(), kMessages, "required", nullptr, nullptr), FGEMMA_ERR_OUT_OF_RANGE);
  EXPECT_NE(std::string(fgemma_last_error()).find("tools: 100000 functions, the limit is 1024"), std::string::npos)
      << fgemma_last_error();
  fgemma_caller_free(c);

  fgemma_caller_params p = fgemma_caller_default_params();
  p.max_tokens = 100000;
  c = NewCaller(p);
  EXPECT_EQ(fgemma_caller_call(c, tools_->c_str(), kMessages, "required", nullptr, nullptr), FGEMMA_ERR_OUT_OF_RANGE);
  EXPECT_NE(std::string(fgemma_last_error()).find("max_tokens: 100000 exceeds the context of 2048 tokens"), std::string::npos)
      << fgemma_last_error();
  fgemma_caller_free(c);
}

}  // namespace
