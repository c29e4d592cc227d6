// Issue 14: callers of one model made with share_passes share forward passes when they call at the
// same time from several threads (the C API's continuous batching), and answer as they do alone.
#include <gtest/gtest.h>

#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "capi/capi_internal.h"
#include "fgemma/fgemma.h"
#include "mini_model_capi_fixture.h"
#include "test_support.h"
#include "util/json.h"

namespace {

class SharedPassesCapi : public fgemma::test::MiniModelCapiTest {
 protected:
  static fgemma_caller* NewCaller(bool share, uint32_t n_ctx = 2048, const char* lora = nullptr) {
    fgemma_caller_params p = fgemma_caller_default_params();
    p.n_ctx = n_ctx;
    p.n_threads = 2;
    p.share_passes = share;
    p.lora_path = lora;
    fgemma_caller* c = nullptr;
    EXPECT_EQ(fgemma_caller_new(model_, p, &c), FGEMMA_OK) << fgemma_last_error();
    return c;
  }
  // The answer's parts that do not depend on timing.
  static std::string Answer(fgemma_caller* c, fgemma_status status) {
    if (status != FGEMMA_OK) return std::string("status ") + fgemma_status_name(status);
    std::string json(static_cast<size_t>(fgemma_caller_result_json(c, nullptr, 0)), '\0');
    fgemma_caller_result_json(c, json.data(), json.size() + 1);
    fgemma::Json j = fgemma::Json::parse(json);
    j.erase("timing");
    return j.dump();
  }
  // The live pass groups of the model (callers with share_passes).
  static std::vector<std::shared_ptr<fgemma::PassBatcher>> LiveGroups() { return model_->engine->LivePassGroups(); }
};

struct Turn {
  std::string messages;
  const char* tool_choice;
};

std::vector<Turn> TurnsOf(int client) {
  const char* utterances[] = {"Turn on the kitchen lights", "Set the thermostat to 21 degrees",
                              "Lock the front door", "Dim the bedroom lights to 30 percent",
                              "Is the garage door open?", "Play some jazz in the living room"};
  const char* choices[] = {"required", nullptr, "required"};
  std::vector<Turn> turns;
  for (int i = 0; i < 3; ++i) {
    const std::string text = utterances[(client + i) % 6];
    turns.push_back({R"([{"role":"user","content":")" + text + R"("}])", choices[(client + i) % 3]});
  }
  return turns;
}

TEST_F(SharedPassesCapi, DefaultIsOff) { EXPECT_FALSE(fgemma_caller_default_params().share_passes); }

TEST_F(SharedPassesCapi, ConcurrentCallersSharePassesAndAnswerAsAlone) {
  constexpr int kClients = 4;
  // Alone: each client's turns on a caller of its own, one client at a time.
  std::vector<std::vector<std::string>> alone(kClients);
  for (int c = 0; c < kClients; ++c) {
    fgemma_caller* caller = NewCaller(false);
    for (const Turn& t : TurnsOf(c))
      alone[c].push_back(
          Answer(caller, fgemma_caller_call(caller, tools_->c_str(), t.messages.c_str(), t.tool_choice, nullptr, nullptr)));
    fgemma_caller_free(caller);
  }
  // Together: the same turns from kClients threads at once, callers sharing passes.
  std::vector<fgemma_caller*> callers;
  for (int c = 0; c < kClients; ++c) callers.push_back(NewCaller(true));
  const auto groups = LiveGroups();
  ASSERT_EQ(groups.size(), 1u) << "one pass group for callers with equal params";
  groups[0]->set_gather_wait(std::chrono::seconds(1));  // shared passes even on a loaded machine
  std::vector<std::vector<std::string>> together(kClients);
  std::latch start(kClients);
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c)
    threads.emplace_back([&, c] {
      start.arrive_and_wait();
      for (const Turn& t : TurnsOf(c))
        together[c].push_back(Answer(
            callers[c], fgemma_caller_call(callers[c], tools_->c_str(), t.messages.c_str(), t.tool_choice, nullptr, nullptr)));
    });
  for (auto& t : threads) t.join();
  for (int c = 0; c < kClients; ++c) EXPECT_EQ(together[c], alone[c]) << "client " << c;
  const fgemma::PassBatcher::Stats stats = groups[0]->stats();
  EXPECT_GT(stats.shared, 0u) << "passes: " << stats.passes;
  EXPECT_GE(stats.max_sessions, 2u);
  for (fgemma_caller* c : callers) fgemma_caller_free(c);
}

TEST_F(SharedPassesCapi, GroupsFollowTheParamsAndLiveWithTheirCallers) {
  fgemma_caller* a = NewCaller(true, 2048);
  fgemma_caller* b = NewCaller(true, 2048);
  fgemma_caller* c = NewCaller(true, 1024);  // another context: another group
  fgemma_caller* d = NewCaller(false);        // not sharing: no group
  EXPECT_EQ(LiveGroups().size(), 2u);
  fgemma_caller_free(a);
  fgemma_caller_free(c);
  EXPECT_EQ(LiveGroups().size(), 1u);
  fgemma_caller_free(b);
  EXPECT_EQ(LiveGroups().size(), 0u);
  // A later caller makes a new group and works.
  fgemma_caller* e = NewCaller(true);
  EXPECT_EQ(LiveGroups().size(), 1u);
  EXPECT_EQ(fgemma_caller_call(e, tools_->c_str(), R"([{"role":"user","content":"Lock the front door"}])", "required",
                               nullptr, nullptr),
            FGEMMA_OK)
      << fgemma_last_error();
  fgemma_caller_free(e);
  fgemma_caller_free(d);
}

TEST_F(SharedPassesCapi, CallersWithOneAdapterShareItAndItsPasses) {
  const std::string lora = fgemma::test::FixturePath("lora/mini-lora-s14");
  fgemma_caller* plain = NewCaller(false, 2048, lora.c_str());
  fgemma_caller* a = NewCaller(true, 2048, lora.c_str());
  fgemma_caller* b = NewCaller(true, 2048, lora.c_str());
  fgemma_caller* base = NewCaller(true, 2048);  // no adapter: a group of its own
  ASSERT_EQ(LiveGroups().size(), 2u);
  EXPECT_EQ(a->caller->options().lora, b->caller->options().lora) << "one copy of the adapter per group";
  // The model's engine loads an adapter once for all its callers, sharing passes or not.
  EXPECT_EQ(plain->caller->options().lora, a->caller->options().lora);
  const std::string messages = R"([{"role":"user","content":"Dim the bedroom lights to 30 percent"}])";
  const std::string expected =
      Answer(plain, fgemma_caller_call(plain, tools_->c_str(), messages.c_str(), "required", nullptr, nullptr));
  std::string got_a, got_b;
  std::latch start(2);
  std::thread ta([&] {
    start.arrive_and_wait();
    got_a = Answer(a, fgemma_caller_call(a, tools_->c_str(), messages.c_str(), "required", nullptr, nullptr));
  });
  std::thread tb([&] {
    start.arrive_and_wait();
    got_b = Answer(b, fgemma_caller_call(b, tools_->c_str(), messages.c_str(), "required", nullptr, nullptr));
  });
  ta.join();
  tb.join();
  EXPECT_EQ(got_a, expected);
  EXPECT_EQ(got_b, expected);
  EXPECT_NE(Answer(base, fgemma_caller_call(base, tools_->c_str(), messages.c_str(), "required", nullptr, nullptr)),
            std::string()) << fgemma_last_error();
  for (fgemma_caller* c : {plain, a, b, base}) fgemma_caller_free(c);
}

TEST_F(SharedPassesCapi, AMissingAdapterIsNotFound) {
  fgemma_caller_params p = fgemma_caller_default_params();
  p.share_passes = true;
  p.lora_path = "/nonexistent/adapter";
  fgemma_caller* c = nullptr;
  EXPECT_EQ(fgemma_caller_new(model_, p, &c), FGEMMA_ERR_NOT_FOUND);
  EXPECT_EQ(c, nullptr);
  EXPECT_NE(std::string(fgemma_last_error()).find("/nonexistent/adapter"), std::string::npos) << fgemma_last_error();
  EXPECT_TRUE(LiveGroups().empty());
}

}  // namespace
