// The HTTP server over loopback, in process on an ephemeral port: the same calls as `fgemma call`,
// streaming, errors, and 8 concurrent clients x 50 requests (peak RSS and latency printed).
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "server/server.h"
#include "test_support.h"
#include "util/mapped_file.h"
#include "util/process_stats.h"

namespace fgemma::server {
namespace {

const char* kUtterance = "Turn on the kitchen lights";

std::string ToolsText() { return ReadFileToString(test::FixturePath("chat/smart-home-tools.json")).value(); }

std::string Body(bool stream, const std::string& choice = "required") {
  Json body = {{"model", "mini-bf16"},
               {"tool_choice", choice},
               {"stream", stream},
               {"tools", Json::parse(ToolsText())},
               {"messages",
                {{{"role", "developer"},
                  {"content", "You are a model that can do function calling with the following functions"}},
                 {{"role", "user"}, {"content", kUtterance}}}}};
  return body.dump();
}

std::unique_ptr<Server> StartServer(ServerOptions o) {
  o.model_path = test::FixturePath("models/mini-bf16");
  o.port = 0;
  auto srv = Server::Create(o);
  EXPECT_TRUE(srv.ok()) << srv.status().ToString();
  if (!srv.ok()) return nullptr;
  EXPECT_TRUE(srv.value()->Start().ok());
  return std::move(srv).value();
}

httplib::Client ClientFor(const Server& s) {
  httplib::Client c("127.0.0.1", s.port());
  c.set_read_timeout(120, 0);
  return c;
}

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ServerOptions o;
    o.sessions = 2;
    server_ = StartServer(o).release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static Server* server_;
};
Server* ServerTest::server_ = nullptr;

TEST_F(ServerTest, SameCallsAsCli) {
  ASSERT_NE(server_, nullptr);
  auto cli = ClientFor(*server_);
  auto res = cli.Post("/v1/chat/completions", Body(false), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  Json j = Json::parse(res->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");
  const Json& calls = j["choices"][0]["message"]["tool_calls"];
  ASSERT_FALSE(calls.empty());
  EXPECT_TRUE(calls[0]["function"]["arguments"].is_string());

  std::string out;
  const std::string cmd = test::CliPath() + " call --model " + test::FixturePath("models/mini-bf16") + " --tools " +
                          test::FixturePath("chat/smart-home-tools.json") + " --tool-choice required --threads 1 '" +
                          kUtterance + "'";
  ASSERT_EQ(test::RunCommand(cmd, &out), 0) << out;
  Json expected = Json::parse(out);
  EXPECT_EQ(j["fgemma"]["calls"], expected["calls"]);
  ASSERT_EQ(calls.size(), expected["calls"].size());
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i]["function"]["name"], expected["calls"][i]["name"]);
    EXPECT_EQ(Json::parse(calls[i]["function"]["arguments"].get<std::string>()), expected["calls"][i]["arguments"]);
  }
}

TEST_F(ServerTest, StreamingEndsWithDone) {
  ASSERT_NE(server_, nullptr);
  auto cli = ClientFor(*server_);
  auto plain = cli.Post("/v1/chat/completions", Body(false), "application/json");
  ASSERT_TRUE(plain && plain->status == 200);
  auto res = cli.Post("/v1/chat/completions", Body(true), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  EXPECT_NE(res->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  std::vector<std::string> events;
  size_t pos = 0;
  while (true) {
    const size_t end = res->body.find("\n\n", pos);
    if (end == std::string::npos) break;
    const std::string ev = res->body.substr(pos, end - pos);
    ASSERT_EQ(ev.rfind("data: ", 0), 0u) << ev;
    events.push_back(ev.substr(6));
    pos = end + 2;
  }
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  Json names = Json::array();
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    Json chunk = Json::parse(events[i]);
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    const Json& delta = chunk["choices"][0]["delta"];
    if (delta.contains("tool_calls")) names.push_back(delta["tool_calls"][0]["function"]["name"]);
  }
  EXPECT_EQ(Json::parse(events[events.size() - 2])["choices"][0]["finish_reason"], "tool_calls");
  // Every streamed call names a declared tool (the pool's sessions are compared with the CLI above).
  ASSERT_FALSE(names.empty());
  for (const auto& n : names) EXPECT_NE(ToolsText().find("\"" + n.get<std::string>() + "\""), std::string::npos);
}

TEST_F(ServerTest, ErrorsAreJson) {
  ASSERT_NE(server_, nullptr);
  auto cli = ClientFor(*server_);
  auto check = [](const httplib::Result& res, int status) {
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, status) << res->body;
    Json j = Json::parse(res->body, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << res->body;
    EXPECT_TRUE(j["error"]["message"].is_string());
    EXPECT_TRUE(j["error"]["type"].is_string());
  };
  check(cli.Post("/v1/chat/completions", "{\"model\":", "application/json"), 400);
  check(cli.Post("/v1/chat/completions", R"({"model":"mini-bf16","messages":"x"})", "application/json"), 400);
  check(cli.Post("/v1/chat/completions", R"({"model":"gpt-4","messages":[]})", "application/json"), 404);
  check(cli.Get("/v1/nothing"), 404);
  // The server answers 413 from the headers and closes; a client still writing may see a reset instead.
  auto big = cli.Post("/v1/chat/completions", std::string(2 << 20, ' '), "application/json");
  if (big) check(big, 413);
  auto models = cli.Get("/v1/models");
  ASSERT_TRUE(models && models->status == 200);
  EXPECT_EQ(Json::parse(models->body)["data"][0]["id"], "mini-bf16");
  auto health = cli.Get("/health");
  ASSERT_TRUE(health && health->status == 200);
}

TEST(ServerAuth, ApiKeyAndHostRules) {
  ServerOptions o;
  o.sessions = 1;
  o.api_key = "sekret";
  auto srv = StartServer(o);
  ASSERT_NE(srv, nullptr);
  auto cli = ClientFor(*srv);
  auto res = cli.Get("/v1/models");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_EQ(Json::parse(res->body)["error"]["type"], "authentication_error");
  res = cli.Get("/v1/models", {{"Authorization", "Bearer wrong"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  res = cli.Get("/v1/models", {{"Authorization", "Bearer sekret"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);

  ServerOptions open;
  open.model_path = test::FixturePath("models/mini-bf16");
  open.host = "0.0.0.0";
  auto refused = Server::Create(open);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--api-key"), std::string::npos);
}

TEST(ServerBusy, QueueTimeoutIs503) {
  ServerOptions o;
  o.sessions = 1;
  o.queue_timeout_ms = 1;
  auto srv = StartServer(o);
  ASSERT_NE(srv, nullptr);
  // Several at once against one session with no queueing: at least one must be refused.
  std::vector<int> codes(4, 0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < codes.size(); ++i)
    threads.emplace_back([&, i] {
      auto cli = ClientFor(*srv);
      auto res = cli.Post("/v1/chat/completions", Body(false), "application/json");
      codes[i] = res ? res->status : -1;
      if (res && res->status == 503) EXPECT_EQ(Json::parse(res->body)["error"]["type"], "server_busy_error");
    });
  for (auto& t : threads) t.join();
  EXPECT_NE(std::count(codes.begin(), codes.end(), 503), 0);
  EXPECT_NE(std::count(codes.begin(), codes.end(), 200), 0);
}

TEST_F(ServerTest, EightClientsFiftyRequestsEach) {
  ASSERT_NE(server_, nullptr);
  constexpr int kClients = 8, kRequests = 50;  // ~5 min on 2 shared cores (random weights: long strings)
  std::vector<double> latencies(kClients * kRequests, 0);
  std::vector<int> errors(kClients, 0);
  const std::string body = Body(false);
  const double start = NowSeconds();
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c)
    threads.emplace_back([&, c] {
      auto cli = ClientFor(*server_);
      for (int r = 0; r < kRequests; ++r) {
        const double t0 = NowSeconds();
        auto res = cli.Post("/v1/chat/completions", body, "application/json");
        latencies[c * kRequests + r] = (NowSeconds() - t0) * 1000;
        if (!res || res->status != 200) ++errors[c];
      }
    });
  for (auto& t : threads) t.join();
  const double wall = NowSeconds() - start;
  for (int c = 0; c < kClients; ++c) EXPECT_EQ(errors[c], 0) << "client " << c;
  std::sort(latencies.begin(), latencies.end());
  const double p50 = latencies[latencies.size() / 2], p95 = latencies[latencies.size() * 95 / 100];
  std::printf("[ server ] %d clients x %d requests: %.1f s, %.1f req/s, p50 %.1f ms, p95 %.1f ms, peak RSS %.1f MiB\n",
              kClients, kRequests, wall, kClients * kRequests / wall, p50, p95, PeakRssBytes() / 1048576.0);
}

TEST_F(ServerTest, PythonClientExample) {
  ASSERT_NE(server_, nullptr);
  if (test::RunCommand("python3 --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 not installed";
  std::string out;
  const std::string cmd = "python3 " + std::string(FGEMMA_SOURCE_DIR) + "/examples/python_client.py --url http://127.0.0.1:" +
                          std::to_string(server_->port()) + " --model mini-bf16 --tools " +
                          test::FixturePath("chat/smart-home-tools.json") + " --tool-choice required '" + kUtterance + "'";
  ASSERT_EQ(test::RunCommand(cmd, &out), 0) << out;
  EXPECT_NE(out.find("tool call:"), std::string::npos) << out;
}

}  // namespace
}  // namespace fgemma::server
