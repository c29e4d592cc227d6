// Hostile clients against the server over loopback (issue 16): chunked bodies past --max-body,
// wrong content types, `stream` of the wrong type, streamed requests that fail before their first
// token, a full queue, a request deadline, slow connections (slowloris), a second server on a used
// port, and --host names that only look like loopback. Each checks the server goes on serving.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "server/host_address.h"
#include "server/http_policy.h"
#include "server/server.h"
#include "loopback_client.h"
#include "test_support.h"
#include "util/mapped_file.h"
#include "util/process_stats.h"

namespace fgemma::server {
namespace {

using loopback::ClientFor;
using loopback::Connect;
using loopback::SendAll;
using loopback::StartServer;

Json ValidBody(bool stream = false) {
  return {{"model", "mini-bf16"},
          {"tool_choice", "required"},
          {"stream", stream},
          {"tools", Json::parse(ReadFileToString(test::FixturePath("chat/smart-home-tools.json")).value())},
          {"messages", Json::array({{{"role", "user"}, {"content", "Turn on the kitchen lights"}}})}};
}

// The error type and message of a JSON error response (and the status checked).
std::string ErrorOf(const httplib::Result& res, int status) {
  EXPECT_TRUE(res);
  if (!res) return "";
  EXPECT_EQ(res->status, status) << res->body;
  const Json j = Json::parse(res->body, nullptr, false);
  EXPECT_TRUE(j.is_object() && j.contains("error")) << res->body;
  if (!j.is_object() || !j.contains("error")) return "";
  return j["error"]["message"].get<std::string>();
}

// /health answers within `bound_s`; returns its latency.
double HealthLatency(const Server& s, double bound_s = 2.0) {
  httplib::Client c("127.0.0.1", s.port());
  c.set_connection_timeout(static_cast<time_t>(bound_s) + 1, 0);
  c.set_read_timeout(static_cast<time_t>(bound_s) + 1, 0);
  const double t0 = NowSeconds();
  auto res = c.Get("/health");
  const double dt = NowSeconds() - t0;
  EXPECT_TRUE(res && res->status == 200) << "no /health answer after " << dt << " s, error " << (res ? 0 : static_cast<int>(res.error()));
  EXPECT_LT(dt, bound_s);
  return dt;
}

std::string HealthOf(const Server& s) {
  auto cli = ClientFor(s);
  auto res = cli.Get("/health");
  EXPECT_TRUE(res && res->status == 200);
  return res ? res->body : "{}";
}

// A valid request still gets its calls.
void ExpectServes(const Server& s) {
  auto cli = ClientFor(s);
  auto res = cli.Post("/v1/chat/completions", ValidBody().dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(Json::parse(res->body)["choices"][0]["finish_reason"], "tool_calls");
}

// What the server sent within `timeout_ms` (until it closes or stays quiet that long).
std::string ReadSome(int fd, int timeout_ms) {
  std::string out;
  char buf[4096];
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, timeout_ms) > 0) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.find("\r\n\r\n") != std::string::npos) timeout_ms = 200;  // headers in: take what follows
  }
  return out;
}

class HostileServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ServerOptions o;
    o.sessions = 1;
    o.max_body_bytes = 256 << 10;
    server_ = StartServer(o).release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static Server* server_;
};
Server* HostileServer::server_ = nullptr;

// Finding 2: a chunked upload is counted as it arrives and refused once past --max-body, long
// before the sender is done; the server holds no more than the limit.
TEST_F(HostileServer, ChunkedBodyPastMaxBodyIs413) {
  ASSERT_NE(server_, nullptr);
  const int fd = Connect(server_->port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          "Transfer-Encoding: chunked\r\n\r\n"));
  const std::string chunk(64 << 10, ' ');
  char size_line[32];
  std::snprintf(size_line, sizeof size_line, "%zx\r\n", chunk.size());
  const uint64_t rss_before = CurrentRssBytes();
  std::atomic<bool> stop{false};
  std::atomic<size_t> sent{0};
  // Up to 300 MB, as in the finding; the server must answer long before.
  std::thread sender([&] {
    while (!stop && sent < (300u << 20)) {
      if (!SendAll(fd, size_line + chunk + "\r\n")) break;
      sent += chunk.size();
    }
  });
  const std::string answer = ReadSome(fd, 30000);
  stop = true;
  shutdown(fd, SHUT_RDWR);
  sender.join();
  close(fd);
  EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer.substr(0, 200);
  EXPECT_NE(answer.find("--max-body"), std::string::npos) << answer;
  EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer;
  EXPECT_LT(sent.load(), 64u << 20) << "the server read far past the limit before answering";
  // Not under ASan: its quarantine keeps every freed chunk resident (up to 256 MB), so RSS there
  // counts what was allocated, not what is held; the release build checks it.
  if (!test::kSanitized) EXPECT_LT(CurrentRssBytes(), rss_before + (64u << 20));
  std::printf("[ hostile ] chunked flood: 413 after %.1f MiB sent\n", sent.load() / 1048576.0);
  HealthLatency(*server_);
  // A chunked body within the limit is read and answered.
  const std::string body = ValidBody().dump();
  const int fd2 = Connect(server_->port());
  char len[32];
  std::snprintf(len, sizeof len, "%zx\r\n", body.size());
  ASSERT_TRUE(SendAll(fd2, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
                               std::string(len) + body + "\r\n0\r\n\r\n"));
  const std::string ok = ReadSome(fd2, 120000);
  close(fd2);
  EXPECT_EQ(ok.rfind("HTTP/1.1 200", 0), 0u) << ok.substr(0, 300);
}

// Finding 9: content types as documented; a form type is 415 however small or large (it was 413
// from 8 KB), never read as a form.
TEST_F(HostileServer, ContentTypes) {
  ASSERT_NE(server_, nullptr);
  auto cli = ClientFor(*server_);
  const std::string big(10 << 10, 'a');
  for (const char* type : {"application/x-www-form-urlencoded", "multipart/form-data; boundary=xyz", "text/plain",
                           "application/json; charset=latin1", "application/jsonx"}) {
    SCOPED_TRACE(type);
    const std::string m = ErrorOf(cli.Post("/v1/chat/completions", big, type), 415);
    EXPECT_NE(m.find("application/json"), std::string::npos) << m;
  }
  auto res = cli.Post("/v1/chat/completions", ValidBody().dump(), "Application/JSON; Charset=\"UTF-8\"");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_TRUE(IsJsonContentType(""));
  EXPECT_TRUE(IsJsonContentType("application/json"));
  EXPECT_TRUE(IsJsonContentType("application/json;charset=utf-8"));
  EXPECT_FALSE(IsJsonContentType("application/json; boundary=x"));
  EXPECT_FALSE(IsJsonContentType("application/x-www-form-urlencoded"));
  // The refused form body is never read, so it can never be taken for the next request: the
  // connection is closed after the 415 and what follows is not answered (issue 30 finding 3).
  const int fd = Connect(server_->port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                          "Content-Length: " + std::to_string(big.size()) + "\r\n\r\n" + big));
  SendAll(fd, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  bool closed = false;
  const std::string both = loopback::ReadUntilClose(fd, 5000, &closed);
  close(fd);
  EXPECT_EQ(loopback::StatusesIn(both), std::vector<int>{415}) << both;
  EXPECT_TRUE(closed);
  // Bodies on routes that take none are refused unread.
  auto get = cli.Post("/health", "x", "application/json");
  ASSERT_TRUE(get);
  EXPECT_NE(get->status, 200);
}

TEST_F(HostileServer, StreamMustBeABoolean) {
  ASSERT_NE(server_, nullptr);
  auto cli = ClientFor(*server_);
  for (Json v : {Json("yes"), Json(1), Json::object()}) {
    Json b = ValidBody();
    b["stream"] = v;
    const std::string m = ErrorOf(cli.Post("/v1/chat/completions", b.dump(), "application/json"), 400);
    EXPECT_NE(m.find("stream"), std::string::npos) << m;
  }
}

// A wrong type deep in a message is the request's error, never an escaped exception.
TEST_F(HostileServer, WrongTypesAre400) {
  ASSERT_NE(server_, nullptr);
  auto cli = ClientFor(*server_);
  Json b = ValidBody();
  b["messages"].push_back({{"role", "tool"}, {"content", Json::array({{{"type", 5}}})}});
  const std::string m = ErrorOf(cli.Post("/v1/chat/completions", b.dump(), "application/json"), 400);
  EXPECT_EQ(m.find("HTTP error"), std::string::npos) << m;
  b = ValidBody();
  b["model"] = 7;
  EXPECT_NE(ErrorOf(cli.Post("/v1/chat/completions", b.dump(), "application/json"), 400).find("model"),
            std::string::npos);
}

// Finding 9: a streamed request whose prompt does not fit is a 400 JSON error, not a 200 stream.
TEST_F(HostileServer, StreamedRequestValidatedBeforeThe200) {
  ASSERT_NE(server_, nullptr);
  auto cli = ClientFor(*server_);
  Json b = ValidBody(true);
  std::string long_text;
  for (int i = 0; i < 6000; ++i) long_text += "lights ";
  b["messages"][0]["content"] = long_text;
  const std::string m = ErrorOf(cli.Post("/v1/chat/completions", b.dump(), "application/json"), 400);
  EXPECT_NE(m.find("context"), std::string::npos) << m;
  // Still streaming fine.
  auto res = cli.Post("/v1/chat/completions", ValidBody(true).dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("data: [DONE]"), std::string::npos);
}

// The documented 429: past sessions + --max-queue, with Retry-After.
TEST(HostileQueue, QueueFullIs429WithRetryAfter) {
  ServerOptions o;
  o.sessions = 1;
  o.max_queue = 0;
  auto srv = StartServer(o);
  ASSERT_NE(srv, nullptr);
  std::vector<int> codes(4, 0);
  std::vector<std::string> retry(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < codes.size(); ++i)
    threads.emplace_back([&, i] {
      auto cli = ClientFor(*srv);
      auto res = cli.Post("/v1/chat/completions", ValidBody().dump(), "application/json");
      codes[i] = res ? res->status : -1;
      if (res) retry[i] = res->get_header_value("Retry-After");
      if (res && res->status == 429) EXPECT_EQ(Json::parse(res->body)["error"]["type"], "rate_limit_error");
    });
  for (auto& t : threads) t.join();
  EXPECT_NE(std::count(codes.begin(), codes.end(), 429), 0);
  EXPECT_NE(std::count(codes.begin(), codes.end(), 200), 0);
  for (size_t i = 0; i < codes.size(); ++i)
    if (codes[i] == 429) EXPECT_EQ(retry[i], "1");
  ExpectServes(*srv);
}

// Finding 4: a call running past --request-timeout-s stops with finish_reason "deadline".
TEST(HostileDeadline, RequestTimeoutStopsTheCall) {
  ServerOptions o;
  o.sessions = 1;
  o.request_timeout_s = 0.001;
  auto srv = StartServer(o);
  ASSERT_NE(srv, nullptr);
  auto cli = ClientFor(*srv);
  auto res = cli.Post("/v1/chat/completions", ValidBody().dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(Json::parse(res->body)["choices"][0]["finish_reason"], "deadline") << res->body;
  res = cli.Post("/v1/chat/completions", ValidBody(true).dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_NE(res->body.find("\"finish_reason\":\"deadline\""), std::string::npos) << res->body;
  EXPECT_EQ(Json::parse(HealthOf(*srv))["busy"], 0);
}

// Finding 4: more slow connections than workers (one byte every 300 ms, never finishing their
// headers) cannot starve /health or a valid request: each is cut after --read-timeout-s +
// --keep-alive-s. A body that trickles is 408.
TEST(HostileSlowloris, SlowConnectionsCannotHoldEveryWorker) {
  ServerOptions o;
  o.sessions = 1;
  o.http_workers = 4;
  o.read_timeout_s = 1;
  o.keep_alive_s = 1;
  auto srv = StartServer(o);
  ASSERT_NE(srv, nullptr);
  constexpr int kSlow = 8;  // workers + 4
  std::atomic<bool> stop{false};
  std::atomic<int> cut{0};
  std::vector<std::thread> slow;
  for (int i = 0; i < kSlow; ++i)
    slow.emplace_back([&] {
      const std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Padding: " + std::string(4000, 'a');
      const int fd = Connect(srv->port());
      if (fd < 0) return;
      for (size_t k = 0; k < req.size() && !stop; ++k) {
        if (!SendAll(fd, req.substr(k, 1))) {
          ++cut;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
      }
      close(fd);
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // /health is answered within a bound while they trickle (a worker frees within ~2 s).
  double worst = 0;
  for (int i = 0; i < 3; ++i) worst = std::max(worst, HealthLatency(*srv, 5.0));
  ExpectServes(*srv);

  // A body announced whole and sent a byte at a time.
  const int fd = Connect(srv->port());
  ASSERT_GE(fd, 0);
  const std::string body = ValidBody().dump();
  ASSERT_TRUE(SendAll(fd, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n"));
  std::string answer;
  for (size_t k = 0; k < body.size() && answer.empty(); ++k) {
    if (!SendAll(fd, body.substr(k, 1))) break;
    answer = ReadSome(fd, 300);
  }
  if (answer.empty()) answer = ReadSome(fd, 3000);
  close(fd);
  EXPECT_EQ(answer.rfind("HTTP/1.1 408", 0), 0u) << answer.substr(0, 200);
  // By now (over --read-timeout-s since they began) the slow connections have been cut.
  std::printf("[ hostile ] %d slow connections on 4 workers: /health worst %.2f s, %llu reaped\n", kSlow, worst,
              static_cast<unsigned long long>(srv->reaped_connections()));
  EXPECT_GE(srv->reaped_connections(), 1u);
  stop = true;
  for (auto& t : slow) t.join();
  HealthLatency(*srv);
}

// Finding 7: the port is the first server's alone.
TEST(HostilePort, SecondServerOnAUsedPortFails) {
  ServerOptions o;
  o.sessions = 1;
  auto first = StartServer(o);
  ASSERT_NE(first, nullptr);
  ServerOptions o2;
  o2.sessions = 1;
  o2.model_path = test::FixturePath("models/mini-bf16");
  o2.port = first->port();
  auto second = Server::Create(o2);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  const Status st = second.value()->Start();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(std::to_string(first->port())), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("in use"), std::string::npos) << st.ToString();
  ExpectServes(*first);
}

// The same two refusals through `fgemma serve`: a clear error and a failing exit status.
TEST(HostilePort, CliRefusesUsedPortAndFakeLoopbackName) {
  ServerOptions o;
  o.sessions = 1;
  auto first = StartServer(o);
  ASSERT_NE(first, nullptr);
  const std::string serve = test::CliPath() + " serve --sessions 1 --model " + test::FixturePath("models/mini-bf16");
  std::string out;
  EXPECT_NE(test::RunCommand(serve + " --port " + std::to_string(first->port()) + " 2>&1", &out), 0);
  EXPECT_NE(out.find("port " + std::to_string(first->port()) + " is already in use"), std::string::npos) << out;
  out.clear();
  EXPECT_NE(test::RunCommand(serve + " --port 0 --host 127.0.0.1.attacker.example 2>&1", &out), 0);
  EXPECT_TRUE(out.find("does not resolve") != std::string::npos || out.find("--api-key") != std::string::npos) << out;
  ExpectServes(*first);
}

// Graceful shutdown (the 503 of the status policy): once Shutdown() begins, new requests get 503
// with Retry-After while a request already received (here: its body half sent) is still answered
// in full; the listener closes when it is done, well before --drain-s.
TEST(HostileShutdown, DrainRefusesNewRequestsAndFinishesReceivedOnes) {
  ServerOptions o;
  o.sessions = 1;
  o.drain_s = 30;
  auto srv = StartServer(o);
  ASSERT_NE(srv, nullptr);
  const std::string body = ValidBody().dump();
  const int fd = Connect(srv->port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body.substr(0, 10)));
  for (int i = 0; i < 200 && srv->active_requests() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(srv->active_requests(), 1u);
  const double t0 = NowSeconds();
  std::thread stopper([&] { srv->Shutdown(); });
  int status = 0;
  std::string retry_after;
  for (int i = 0; i < 200 && status != 503; ++i) {
    auto cli = ClientFor(*srv);
    auto res = cli.Post("/v1/chat/completions", body, "application/json");
    status = res ? res->status : -1;
    if (res) retry_after = res->get_header_value("Retry-After");
    if (status != 503) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(status, 503);
  EXPECT_EQ(retry_after, "5");
  {
    auto cli = ClientFor(*srv);
    auto health = cli.Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 503) << "a load balancer must see the server leave";
  }
  EXPECT_EQ(srv->active_requests(), 1u) << "the half-received request is still waited for";
  ASSERT_TRUE(SendAll(fd, body.substr(10)));
  const std::string answer = ReadSome(fd, 5000);
  ::close(fd);
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer.substr(0, 200);
  EXPECT_NE(answer.find("\"finish_reason\":\"tool_calls\""), std::string::npos) << answer.substr(0, 400);
  stopper.join();
  EXPECT_LT(NowSeconds() - t0, 10.0);
  EXPECT_EQ(srv->active_requests(), 0u);
  EXPECT_LT(Connect(srv->port()), 0) << "the listener is closed after the drain";
}

// A request that is never completed holds the drain no longer than --drain-s.
TEST(HostileShutdown, DrainIsBounded) {
  ServerOptions o;
  o.sessions = 1;
  o.drain_s = 0.3;
  o.read_timeout_s = 5;
  auto srv = StartServer(o);
  ASSERT_NE(srv, nullptr);
  const int fd = Connect(srv->port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          "Content-Length: 1000\r\n\r\n{"));
  for (int i = 0; i < 200 && srv->active_requests() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(srv->active_requests(), 1u);
  const double t0 = NowSeconds();
  srv->Shutdown();
  const double took = NowSeconds() - t0;
  EXPECT_GE(took, 0.25);
  EXPECT_LT(took, 3.0);
  ::close(fd);
}

// `fgemma serve` drains on SIGTERM and exits 0 (a second signal would stop it at once).
TEST(HostileShutdown, CliStopsOnSigterm) {
  const std::string serve = test::CliPath() + " serve --sessions 1 --port 0 --model " + test::FixturePath("models/mini-bf16");
  const std::string log = test::TempDir() + "/serve-sigterm.log";
  std::string out;
  EXPECT_EQ(test::RunCommand(serve + " >" + log + " 2>&1 & pid=$!; for i in $(seq 300); do grep -q serving " + log +
                                 " && break; sleep 0.1; done; kill -TERM $pid; wait $pid; echo \"exit $?\"; cat " + log,
                             &out),
            0);
  EXPECT_NE(out.find("fgemma: serving"), std::string::npos) << out;
  EXPECT_NE(out.find("fgemma: stopping"), std::string::npos) << out;
  EXPECT_NE(out.find("exit 0"), std::string::npos) << out;
}

// Finding 5: loopback is decided on every resolved address.
TEST(HostAddress, LoopbackOnResolvedAddresses) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackAddress("127.255.0.9"));
  EXPECT_TRUE(IsLoopbackAddress("::1"));
  EXPECT_TRUE(IsLoopbackAddress("::ffff:127.0.0.1"));
  EXPECT_FALSE(IsLoopbackAddress("128.0.0.1"));
  EXPECT_FALSE(IsLoopbackAddress("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackAddress("::"));
  EXPECT_FALSE(IsLoopbackAddress("::ffff:10.0.0.1"));
  EXPECT_FALSE(IsLoopbackAddress("127.0.0.1.attacker.example"));
  EXPECT_FALSE(IsLoopbackAddress(""));
  EXPECT_TRUE(AllLoopback({"127.0.0.1", "::1"}));
  EXPECT_FALSE(AllLoopback({"127.0.0.1", "192.168.1.5"}));
  EXPECT_FALSE(AllLoopback({}));
  auto local = ResolveHost("localhost");
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_TRUE(AllLoopback(local.value()));
  auto numeric = ResolveHost("127.0.0.1");
  ASSERT_TRUE(numeric.ok());
  EXPECT_EQ(numeric.value(), std::vector<std::string>{"127.0.0.1"});
  auto any = ResolveHost("0.0.0.0");
  ASSERT_TRUE(any.ok());
  EXPECT_FALSE(AllLoopback(any.value()));
}

TEST(HostAddress, NamesThatLookLikeLoopbackAreRefusedWithoutAKey) {
  for (const char* host : {"127.0.0.1.attacker.example", "127.evil.invalid", "0.0.0.0", "::"}) {
    SCOPED_TRACE(host);
    ServerOptions o;
    o.model_path = test::FixturePath("models/mini-bf16");
    o.host = host;
    auto srv = Server::Create(o);
    ASSERT_FALSE(srv.ok());
    const std::string m = srv.status().message();
    EXPECT_TRUE(m.find("--api-key") != std::string::npos || m.find("does not resolve") != std::string::npos) << m;
  }
  ServerOptions o;
  o.model_path = test::FixturePath("models/mini-bf16");
  o.host = "localhost";
  o.sessions = 1;
  EXPECT_TRUE(Server::Create(o).ok());
}

TEST(ServerLimits, ThreadsSessionsAndWorkersBeyondTheirBoundsAreRefusedBeforeLoading) {
  struct Case {
    int threads;
    size_t sessions, workers;
    const char* names;
  };
  for (const Case& c : {Case{2'147'483'647, 1, 0, "--threads"}, Case{-1, 1, 0, "--threads"},
                        Case{1, kMaxServerSessions + 1, 0, "--sessions"},
                        Case{1, 1, kMaxHttpWorkers + 1, "--http-workers"}}) {
    SCOPED_TRACE(c.names);
    ServerOptions o;
    o.model_path = "/nonexistent/model";  // refused before the model is opened
    o.threads = c.threads;
    o.sessions = c.sessions;
    o.http_workers = c.workers;
    auto srv = Server::Create(o);
    ASSERT_FALSE(srv.ok());
    EXPECT_NE(srv.status().message().find(c.names), std::string::npos) << srv.status().message();
  }
}

}  // namespace
}  // namespace fgemma::server
