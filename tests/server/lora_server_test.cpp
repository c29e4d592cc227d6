// `fgemma serve --lora`: every session runs the adapter (the same calls as `fgemma call --lora`),
// and a bad adapter stops the server from starting with an error naming it.
#include <gtest/gtest.h>
#include <httplib.h>

#include <map>
#include <mutex>
#include <fstream>
#include <thread>
#include <vector>

#include "loopback_client.h"
#include "server/server.h"
#include "test_support.h"
#include "util/mapped_file.h"

namespace fgemma::server {
namespace {

TEST(LoraServer, SameCallsAsTheCliWithTheAdapter) {
  ServerOptions o;
  o.sessions = 1;
  o.threads = 1;
  o.context = 2048;
  o.lora = test::FixturePath("lora/mini-lora-s14");
  auto server = loopback::StartServer(o);
  ASSERT_NE(server, nullptr);
  const Json body = {{"model", "mini-bf16"},
                     {"tool_choice", "required"},
                     {"tools", Json::parse(ReadFileToString(test::FixturePath("chat/smart-home-tools.json")).value())},
                     {"messages",
                      {{{"role", "developer"}, {"content", "You are a model that can do function calling with the following functions"}},
                       {{"role", "user"}, {"content", "Turn on the kitchen lights"}}}}};
  auto cli = loopback::ClientFor(*server);
  auto res = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const Json j = Json::parse(res->body);

  std::string out;
  const std::string cmd = test::CliPath() + " call --model " + test::FixturePath("models/mini-bf16") + " --tools " +
                          test::FixturePath("chat/smart-home-tools.json") + " --tool-choice required --threads 1 --lora " +
                          o.lora + " 'Turn on the kitchen lights'";
  ASSERT_EQ(test::RunCommand(cmd, &out), 0) << out;
  EXPECT_EQ(j["fgemma"]["calls"], Json::parse(out)["calls"]);
  EXPECT_EQ(j["fgemma"].value("text", Json()), Json::parse(out).value("text", Json()));
  EXPECT_FALSE(j["fgemma"]["calls"].empty());
  server->Stop();
}

// Issue 11: several adapters on one base. `--lora NAME=DIR[:SCALE]` serves each adapter as model
// NAME beside the base; concurrent requests naming each get the answers of a server running that
// adapter alone; the base's weights are mapped once; /v1/models and /health list the models.
Json CallOf(const Json& response) {
  const Json& f = response["fgemma"];
  return {f["calls"], f.value("text", Json())};
}

TEST(LoraServer, SeveralAdaptersOnOneBase) {
  const std::string adapter = test::FixturePath("lora/mini-lora-s14");
  const Json body = {{"tool_choice", "required"},
                     {"tools", Json::parse(ReadFileToString(test::FixturePath("chat/smart-home-tools.json")).value())},
                     {"messages", {{{"role", "user"}, {"content", "Turn on the kitchen lights"}}}}};
  auto ask = [&](const Server& s, const std::string& model) -> Json {
    Json b = body;
    if (!model.empty()) b["model"] = model;
    auto cli = loopback::ClientFor(s);
    auto res = cli.Post("/v1/chat/completions", b.dump(), "application/json");
    if (!res || res->status != 200) return Json("HTTP " + (res ? std::to_string(res->status) + " " + res->body : "error"));
    return CallOf(Json::parse(res->body));
  };
  // The answers of servers that each run one of them alone.
  std::map<std::string, Json> expected;
  for (const auto& [name, lora] : std::vector<std::pair<std::string, std::string>>{
           {"mini-bf16", ""}, {"home", adapter}, {"half", adapter + ":0.5"}}) {
    ServerOptions o;
    o.sessions = 1;
    o.lora = lora;
    auto alone = loopback::StartServer(o);
    ASSERT_NE(alone, nullptr);
    expected[name] = ask(*alone, "");
  }
  EXPECT_NE(expected["home"], expected["mini-bf16"]) << "the adapter changes this model's answer";
  EXPECT_NE(expected["home"], expected["half"]) << "so does its scale";

  ServerOptions o;
  o.sessions = 2;
  o.adapters = {"home=" + adapter, "half=" + adapter + ":0.5"};
  auto server = loopback::StartServer(o);
  ASSERT_NE(server, nullptr);
  // The base's weights are mapped once for all three models.
  size_t mappings = 0;
  std::ifstream maps("/proc/self/maps");  // (a /proc file has no size for the mapping reader)
  for (std::string line; std::getline(maps, line);) mappings += line.find("mini-bf16/model.safetensors") != std::string::npos;
  EXPECT_EQ(mappings, 1u);

  const std::vector<std::string> names = {"mini-bf16", "home", "half"};
  std::vector<std::thread> clients;
  std::mutex mu;
  std::vector<std::string> mismatches;
  for (int c = 0; c < 4; ++c)
    clients.emplace_back([&, c] {
      for (int r = 0; r < 3; ++r) {
        const std::string& name = names[static_cast<size_t>(c + r) % names.size()];
        const Json got = ask(*server, name);
        if (got != expected[name]) {
          std::lock_guard lock(mu);
          mismatches.push_back(name + ": " + got.dump() + " != " + expected[name].dump());
        }
      }
    });
  for (auto& t : clients) t.join();
  for (const auto& m : mismatches) ADD_FAILURE() << m;
  EXPECT_EQ(ask(*server, ""), expected["mini-bf16"]) << "no model: the base";

  auto cli = loopback::ClientFor(*server);
  const Json models = Json::parse(cli.Get("/v1/models")->body);
  ASSERT_EQ(models["data"].size(), 3u) << models.dump();
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(models["data"][i]["id"], names[i]);
  const Json health = Json::parse(cli.Get("/health")->body);
  EXPECT_EQ(health["sessions"], 6) << health.dump();
  ASSERT_EQ(health["models"].size(), 3u) << health.dump();
  Json unknown = body;
  unknown["model"] = "car";
  auto res = cli.Post("/v1/chat/completions", unknown.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_NE(res->body.find("\\\"home\\\""), std::string::npos) << res->body;
}

TEST(LoraServer, AdapterNamesAreChecked) {
  const std::string adapter = test::FixturePath("lora/mini-lora-s14");
  for (const auto& [specs, want] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"=" + adapter}, "NAME=DIR"},
           {{"home="}, "NAME=DIR"},
           {{"my home=" + adapter}, "may hold only"},
           {{"home=" + adapter, "home=" + adapter}, "served twice"},
           {{"mini-bf16=" + adapter}, "served twice"},
           {{"home=" + test::FixturePath("lora/tiny-gqa-lora-s11")}, "tiny-gqa-lora-s11"}}) {
    ServerOptions o;
    o.model_path = test::FixturePath("models/mini-bf16");
    o.port = 0;
    o.adapters = specs;
    auto srv = Server::Create(o);
    ASSERT_FALSE(srv.ok()) << specs.front();
    EXPECT_NE(srv.status().message().find(want), std::string::npos) << srv.status().ToString();
  }
}

TEST(LoraServer, BadAdapterIsAnError) {
  ServerOptions o;
  o.model_path = test::FixturePath("models/mini-bf16");
  o.port = 0;
  o.lora = test::FixturePath("lora/tiny-gqa-lora-s11");
  auto srv = Server::Create(o);
  ASSERT_FALSE(srv.ok());
  EXPECT_NE(srv.status().message().find("tiny-gqa-lora-s11"), std::string::npos) << srv.status().ToString();
}

}  // namespace
}  // namespace fgemma::server
