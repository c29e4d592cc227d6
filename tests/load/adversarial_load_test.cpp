// Adversarial load over loopback (issue 16): 16 clients send valid requests while 8 send garbage,
// JSON nested 100,000 deep, chunked floods, trickled bodies, trickled headers, wrong types and
// form bodies, for FGEMMA_LOAD_SECONDS (default 30; the issue's figure is 120). Asserts: no crash,
// every valid request answered 200 with the reference answer, every hostile one refused with its
// documented status (never 500), /health under 1 s throughout, peak RSS bounded. Prints the figures.
// CTest label heavy_load (out of the quick suite).
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
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "loopback_client.h"
#include "server/server.h"
#include "test_support.h"
#include "util/mapped_file.h"
#include "util/process_stats.h"

namespace fgemma::server {
namespace {

using loopback::Connect;
using loopback::SendAll;

// The status of the first response the server sent within `timeout_ms` (0: none, closed).
int StatusWithin(int fd, int timeout_ms) {
  std::string out;
  char buf[4096];
  pollfd p{fd, POLLIN, 0};
  while (out.find("\r\n") == std::string::npos && poll(&p, 1, timeout_ms) > 0) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(out.c_str() + 9) : 0;
}

std::string Head(const std::string& extra) {
  return "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra + "\r\n";
}

// One hostile request of kind `kind`; returns {expected status, got}. Garbage and trickled
// headers expect the connection closed or a 4xx (0 = closed without an answer is fine for them).
std::pair<int, int> Hostile(int port, int kind, std::mt19937& rng) {
  const int fd = Connect(port);
  if (fd < 0) return {-1, -1};
  int expected = 400, got = 0;
  switch (kind) {
    case 0: {  // random bytes where a request should be
      std::string junk(4096, '\0');
      for (char& c : junk) c = static_cast<char>(rng());
      SendAll(fd, junk);
      got = StatusWithin(fd, 10000);
      expected = got == 0 ? 0 : 400;
      if (got >= 400 && got < 500) expected = got;  // 400 or 414, whichever the junk meets
      break;
    }
    case 1: {  // JSON nested 100,000 deep
      const std::string body = R"({"model":"mini-bf16","messages":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
      SendAll(fd, Head("Content-Length: " + std::to_string(body.size()) + "\r\n") + body);
      got = StatusWithin(fd, 30000);
      break;
    }
    case 2: {  // chunked flood until refused
      expected = 413;
      SendAll(fd, Head("Transfer-Encoding: chunked\r\n"));
      const std::string chunk = "10000\r\n" + std::string(0x10000, ' ') + "\r\n";
      std::atomic<bool> done{false};
      std::thread t([&] {
        for (int i = 0; i < 1024 && !done; ++i)
          if (!SendAll(fd, chunk)) break;
      });
      got = StatusWithin(fd, 30000);
      done = true;
      shutdown(fd, SHUT_RDWR);
      t.join();
      break;
    }
    case 3: {  // a body trickled a byte every 250 ms
      expected = 408;
      SendAll(fd, Head("Content-Length: 1000\r\n"));
      for (int i = 0; i < 60 && got == 0; ++i) {
        if (!SendAll(fd, "[")) break;
        got = StatusWithin(fd, 250);
      }
      break;
    }
    case 4: {  // headers trickled a byte every 500 ms: cut, no answer needed
      expected = 0;
      const std::string req = "GET /health HTTP/1.1\r\nX-Slow: " + std::string(200, 'a');
      for (size_t i = 0; i < req.size(); ++i) {
        if (!SendAll(fd, req.substr(i, 1))) break;
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 500) > 0) break;  // closed (or answered) by the server
      }
      got = StatusWithin(fd, 100);
      break;
    }
    case 5: {  // a wrong type deep in a message
      const std::string body =
          R"({"model":"mini-bf16","messages":[{"role":"user","content":"hi"},{"role":"tool","content":[{"type":5}]}]})";
      SendAll(fd, Head("Content-Length: " + std::to_string(body.size()) + "\r\n") + body);
      got = StatusWithin(fd, 30000);
      break;
    }
    default: {  // a form body
      expected = 415;
      const std::string body(20000, 'a');
      SendAll(fd, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                  "Content-Length: 20000\r\n\r\n" + body);
      got = StatusWithin(fd, 30000);
    }
  }
  close(fd);
  return {expected, got};
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

TEST(AdversarialLoad, ValidClientsServedUnderAttack) {
  const char* env = std::getenv("FGEMMA_LOAD_SECONDS");
  const double seconds = env ? std::atof(env) : 30.0;
  ServerOptions o;
  o.model_path = test::FixturePath("models/mini-bf16");
  o.port = 0;
  o.sessions = 2;
  o.queue_timeout_ms = 600000;  // valid clients wait their turn; none may be refused
  auto created = Server::Create(o);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  auto& srv = *created.value();
  ASSERT_TRUE(srv.Start().ok());
  const int port = srv.port();

  Json body = {{"model", "mini-bf16"},
               {"tool_choice", "required"},
               {"tools", Json::parse(ReadFileToString(test::FixturePath("chat/smart-home-tools.json")).value())},
               {"messages", Json::array({{{"role", "developer"},
                                          {"content", "You are a model that can do function calling with the following functions"}},
                                         {{"role", "user"}, {"content", "Turn on the kitchen lights"}}})}};
  httplib::Client ref_cli("127.0.0.1", port);
  ref_cli.set_read_timeout(120, 0);
  auto ref = ref_cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(ref && ref->status == 200);
  Json expected_calls = Json::array();
  const Json ref_json = Json::parse(ref->body);
  for (const Json& c : ref_json["choices"][0]["message"]["tool_calls"]) expected_calls.push_back(c["function"]);
  ASSERT_FALSE(expected_calls.empty()) << ref->body;
  const std::string name = expected_calls[0]["name"].get<std::string>();
  Json stream_body = body;
  stream_body["stream"] = true;
  const uint64_t rss_start = CurrentRssBytes();

  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<double> valid_ms, health_ms;
  size_t valid_ok = 0, valid_bad = 0, health_fail = 0;
  std::map<int, std::map<int, size_t>> hostile;  // kind -> status -> count
  size_t hostile_wrong = 0;
  uint64_t rss_peak_sampled = rss_start;
  const double t_start = NowSeconds();

  std::vector<std::thread> threads;
  for (int c = 0; c < 16; ++c)
    threads.emplace_back([&, c] {
      httplib::Client cli("127.0.0.1", port);
      cli.set_read_timeout(300, 0);
      for (int r = 0; !stop; ++r) {
        const bool streamed = (c + r) % 4 == 0;
        const double t0 = NowSeconds();
        auto res = cli.Post("/v1/chat/completions", (streamed ? stream_body : body).dump(), "application/json");
        const double ms = (NowSeconds() - t0) * 1000;
        bool good = res && res->status == 200;
        if (good && streamed) {
          good = res->body.size() > 14 && res->body.compare(res->body.size() - 14, 14, "data: [DONE]\n\n") == 0 &&
                 res->body.find("\"name\":\"" + name + "\"") != std::string::npos;
        } else if (good) {
          Json calls = Json::array();
          const Json j = Json::parse(res->body);
          for (const Json& call : j["choices"][0]["message"]["tool_calls"]) calls.push_back(call["function"]);
          good = calls == expected_calls;
        }
        std::lock_guard lock(mu);
        valid_ms.push_back(ms);
        (good ? valid_ok : valid_bad)++;
        if (!good) ADD_FAILURE() << "valid request: " << (res ? std::to_string(res->status) + " " + res->body.substr(0, 300) : "no response");
      }
    });
  for (int h = 0; h < 8; ++h)
    threads.emplace_back([&, h] {
      std::mt19937 rng(h);
      for (int r = 0; !stop; ++r) {
        const int kind = (h + r) % 7;
        auto [expected, got] = Hostile(port, kind, rng);
        std::lock_guard lock(mu);
        ++hostile[kind][got];
        if (got != expected || got == 500) {
          ++hostile_wrong;
          ADD_FAILURE() << "hostile kind " << kind << ": expected " << expected << ", got " << got;
        }
      }
    });
  threads.emplace_back([&] {
    while (!stop) {
      httplib::Client hc("127.0.0.1", port);
      hc.set_connection_timeout(5, 0);
      hc.set_read_timeout(5, 0);
      const double t0 = NowSeconds();
      auto res = hc.Get("/health");
      const double ms = (NowSeconds() - t0) * 1000;
      {
        std::lock_guard lock(mu);
        health_ms.push_back(ms);
        if (!res || res->status != 200) ++health_fail;
        rss_peak_sampled = std::max(rss_peak_sampled, CurrentRssBytes());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  while (NowSeconds() - t_start < seconds) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  stop = true;
  for (auto& t : threads) t.join();
  const double wall = NowSeconds() - t_start;

  std::printf("[ load ] %.0f s: %zu valid requests answered correctly, %zu wrong; latency p50 %.0f ms, p95 %.0f ms, max %.0f ms\n",
              wall, valid_ok, valid_bad, Percentile(valid_ms, 0.5), Percentile(valid_ms, 0.95), Percentile(valid_ms, 1.0));
  std::printf("[ load ] /health: %zu probes, %zu failed, p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", health_ms.size(),
              health_fail, Percentile(health_ms, 0.5), Percentile(health_ms, 0.99), Percentile(health_ms, 1.0));
  const char* kinds[] = {"garbage", "nested 100k", "chunked flood", "slow body", "slow headers", "wrong type", "form body"};
  for (const auto& [kind, codes] : hostile) {
    std::string s;
    for (const auto& [code, n] : codes) s += " " + std::to_string(code) + "x" + std::to_string(n);
    std::printf("[ load ] hostile %-13s:%s\n", kinds[kind], s.c_str());
  }
  std::printf("[ load ] RSS: %.1f MiB at start, %.1f MiB sampled peak, %.1f MiB process peak; %llu connections reaped\n",
              rss_start / 1048576.0, rss_peak_sampled / 1048576.0, PeakRssBytes() / 1048576.0,
              static_cast<unsigned long long>(srv.reaped_connections()));
  EXPECT_GT(valid_ok, 0u);
  EXPECT_EQ(valid_bad, 0u);
  EXPECT_EQ(hostile_wrong, 0u);
  EXPECT_EQ(health_fail, 0u);
  EXPECT_LT(Percentile(health_ms, 1.0), 1000.0);
  // Body limits hold: the floods never make the server hold more than a few bodies' worth.
  EXPECT_LT(rss_peak_sampled, rss_start + (256u << 20));
}

}  // namespace
}  // namespace fgemma::server
