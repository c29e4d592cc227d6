// `fgemma serve --lora`: every session runs the adapter (the same calls as `fgemma call --lora`),
// and a bad adapter stops the server from starting with an error naming it.
#include <gtest/gtest.h>
#include <httplib.h>

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
