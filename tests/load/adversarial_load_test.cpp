// Adversarial load over loopback (issues 16 and 30): 16 clients send valid requests while 64
// hostile connections (FGEMMA_LOAD_HOSTILE) send garbage, JSON nested 100,000 deep, chunked
// floods, trickled bodies and headers, wrong types, form bodies, endless chunk-size lines, bodies
// without a length, endless request lines and headers, smuggled requests, 2,000 ranges, idle
// connections and broken pipelines, and bursts of 90 requests overload the default queue, for
// FGEMMA_LOAD_SECONDS (default 30; the issue's figure is 120). Asserts: no crash, every valid
// request answered 200 with the reference answer (a 429 under a burst is waited out and retried),
// every hostile one refused with its documented status (never 500) and nothing answered after an
// error, 429s in the bursts, /health p99 under 100 ms, peak RSS under idle + 128 MiB and back
// within 10 % of idle after. Prints the figures. CTest label heavy_load (out of the quick suite).
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

// What one hostile connection got: the statuses of every response on it, in order.
struct Outcome {
  int expected = 0;               // the status its first response must have (0: none, closed)
  std::vector<int> statuses;
  bool small = true;              // the answer was no larger than what was sent (no amplification)
};

// Reads everything the server sends until it closes or is quiet `quiet_ms`.
std::vector<int> StatusesUntilClose(int fd, int quiet_ms, size_t* bytes = nullptr) {
  const std::string all = loopback::ReadUntilClose(fd, quiet_ms);
  if (bytes) *bytes = all.size();
  return loopback::StatusesIn(all);
}

// Whether the server has sent something (or closed) within `ms`.
bool Answered(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, ms) > 0;
}

std::string Head(const std::string& extra) {
  return "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra + "\r\n";
}

// Sends `head`, then `filler` over and over from a second thread until the server answers.
std::vector<int> Flood(int fd, const std::string& head, const std::string& filler) {
  SendAll(fd, head);
  std::atomic<bool> done{false};
  std::thread t([&] {
    for (int i = 0; i < 4096 && !done; ++i)
      if (!SendAll(fd, filler)) break;
  });
  std::vector<int> statuses = StatusesUntilClose(fd, 30000);
  done = true;
  shutdown(fd, SHUT_RDWR);
  t.join();
  return statuses;
}

constexpr int kHostileKinds = 17;
const char* const kKindNames[kHostileKinds] = {
    "garbage",        "nested 100k",     "chunked flood",   "slow body",     "slow headers",  "wrong type",
    "form body",      "endless chunk",   "slow chunk line", "PUT no length", "endless line",  "endless header",
    "many headers",   "smuggled",        "range 2000",      "idle",          "error+pipeline"};

// One hostile connection of kind `kind` (issue 16's seven, then issue 30's findings 1-3 and 7).
Outcome Hostile(int port, int kind, std::mt19937& rng, const std::string& valid_request) {
  Outcome o;
  const int fd = Connect(port);
  if (fd < 0) {
    o.expected = -1;
    return o;
  }
  const std::string chunked_head = Head("Transfer-Encoding: chunked\r\n");
  o.expected = 400;
  switch (kind) {
    case 0: {  // random bytes where a request should be: 400 (or 414/431/505, whichever the junk meets)
      std::string junk(4096, '\0');
      for (char& c : junk) c = static_cast<char>(rng());
      SendAll(fd, junk);
      o.statuses = StatusesUntilClose(fd, 10000);
      o.expected = o.statuses.empty() ? 0 : o.statuses[0] >= 400 && o.statuses[0] < 600 ? o.statuses[0] : 400;
      break;
    }
    case 1: {  // JSON nested 100,000 deep
      const std::string body = R"({"model":"mini-bf16","messages":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
      SendAll(fd, Head("Content-Length: " + std::to_string(body.size()) + "\r\n") + body);
      o.statuses = StatusesUntilClose(fd, 30000);
      break;
    }
    case 2:  // chunked flood until refused
      o.expected = 413;
      o.statuses = Flood(fd, chunked_head, "10000\r\n" + std::string(0x10000, ' ') + "\r\n");
      break;
    case 3:  // a body trickled a byte every 250 ms: 408 at the request's deadline
      o.expected = 408;
      SendAll(fd, Head("Content-Length: 1000\r\n"));
      for (int i = 0; i < 60 && !Answered(fd, 250); ++i)
        if (!SendAll(fd, "[")) break;
      o.statuses = StatusesUntilClose(fd, 3000);
      break;
    case 4: {  // headers trickled a byte every 500 ms: 408 at the request's deadline
      o.expected = 408;
      const std::string req = "GET /health HTTP/1.1\r\nX-Slow: " + std::string(200, 'a');
      for (size_t i = 0; i < req.size() && !Answered(fd, 500); ++i)
        if (!SendAll(fd, req.substr(i, 1))) break;
      o.statuses = StatusesUntilClose(fd, 3000);
      break;
    }
    case 5: {  // a wrong type deep in a message
      const std::string body =
          R"({"model":"mini-bf16","messages":[{"role":"user","content":"hi"},{"role":"tool","content":[{"type":5}]}]})";
      SendAll(fd, Head("Content-Length: " + std::to_string(body.size()) + "\r\n") + body);
      o.statuses = StatusesUntilClose(fd, 30000);
      break;
    }
    case 6:  // a form body: 415 from the head
      o.expected = 415;
      SendAll(fd, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                  "Content-Length: 20000\r\n\r\n" + std::string(20000, 'a'));
      o.statuses = StatusesUntilClose(fd, 30000);
      break;
    case 7:  // finding 1: a chunk-size line that never ends
      o.statuses = Flood(fd, chunked_head, std::string(16 << 10, '0'));
      break;
    case 8:  // finding 1, slowly: a chunk-size digit every 500 ms
      o.expected = 408;
      SendAll(fd, chunked_head);
      for (int i = 0; i < 40 && !Answered(fd, 500); ++i)
        if (!SendAll(fd, "0")) break;
      o.statuses = StatusesUntilClose(fd, 3000);
      break;
    case 9:  // finding 2: a body without a length on a route that takes none
      o.expected = 404;
      o.statuses = Flood(fd, "PUT /x HTTP/1.1\r\nHost: x\r\n\r\n", std::string(64 << 10, 'b'));
      break;
    case 10:  // finding 2: a request line without end
      o.expected = 414;
      o.statuses = Flood(fd, "GET /", std::string(64 << 10, 'a'));
      break;
    case 11:  // finding 2: one header line without end
      o.expected = 431;
      o.statuses = Flood(fd, "GET /health HTTP/1.1\r\nHost: x\r\nX-Long: ", std::string(64 << 10, 'a'));
      break;
    case 12:  // finding 2: short headers without end
      o.expected = 431;
      o.statuses = Flood(fd, "GET /health HTTP/1.1\r\nHost: x\r\n", "X-a: b\r\n");
      break;
    case 13:  // finding 3: a complete request smuggled as the body of a refused one
      o.expected = 413;
      SendAll(fd, Head("Content-Length: 2000000\r\n"));
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      SendAll(fd, valid_request);
      o.statuses = StatusesUntilClose(fd, 10000);
      break;
    case 14: {  // finding 7: 2,000 ranges on /health (no key needed): ignored, one small 200
      o.expected = 200;
      std::string request = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\nRange: bytes=0-";
      for (int i = 0; i < 2000; ++i) request += ",0-";
      request += "\r\n\r\n";
      SendAll(fd, request);
      size_t bytes = 0;
      o.statuses = StatusesUntilClose(fd, 10000, &bytes);
      o.small = bytes < request.size();
      break;
    }
    case 15:  // finding 7: an idle connection, closed by the server after --keep-alive-s
      o.expected = 0;
      o.statuses = StatusesUntilClose(fd, 15000);
      break;
    default:  // finding 3/7: a pipeline whose second request is malformed: its 400, nothing after
      o.expected = 200;
      SendAll(fd, "GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\n\r\n" + valid_request);
      o.statuses = StatusesUntilClose(fd, 10000);
      break;
  }
  close(fd);
  return o;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

// Responses a connection got after its first error response (the server must close instead).
size_t ResponsesAfterError(const std::vector<int>& statuses) {
  for (size_t i = 0; i < statuses.size(); ++i)
    if (statuses[i] >= 400) return statuses.size() - i - 1;
  return 0;
}

TEST(AdversarialLoad, ValidClientsServedUnderAttack) {
  const char* env = std::getenv("FGEMMA_LOAD_SECONDS");
  const double seconds = env ? std::atof(env) : 30.0;
  const char* hostile_env = std::getenv("FGEMMA_LOAD_HOSTILE");
  const int hostile_connections = hostile_env ? std::atoi(hostile_env) : 64;
  ServerOptions o;  // the defaults (--max-queue 64, workers, timeouts), two sessions
  o.model_path = test::FixturePath("models/mini-bf16");
  o.port = 0;
  o.sessions = 2;
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
  const std::string valid_request = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                    "Content-Length: " + std::to_string(body.dump().size()) + "\r\n\r\n" + body.dump();
  const std::string burst_request = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                    "Connection: close\r\nContent-Length: " + std::to_string(body.dump().size()) + "\r\n\r\n" + body.dump();
  // 90 requests at once (Connection: close); the first status of each answer.
  const auto burst = [&] {
    std::vector<int> fds, firsts;
    for (int i = 0; i < 90; ++i)
      if (const int fd = Connect(port); fd >= 0) fds.push_back(fd);
    for (int fd : fds) SendAll(fd, burst_request);
    for (int fd : fds) {
      const std::vector<int> statuses = StatusesUntilClose(fd, 120000);
      close(fd);
      firsts.push_back(statuses.empty() ? 0 : statuses[0]);
    }
    return firsts;
  };
  // The idle level is the warmed-up server's, after valid traffic alone and with no client left:
  // 16 clients' plain and streamed requests at once (streams run on threads of their own, whose
  // stacks glibc keeps for reuse) and a burst that runs a request on every worker.
  {
    std::vector<std::thread> warm;
    for (int c = 0; c < 16; ++c)
      warm.emplace_back([&] {
        httplib::Client cli("127.0.0.1", port);
        cli.set_read_timeout(300, 0);
        for (const Json* b : {&body, &stream_body}) EXPECT_TRUE(cli.Post("/v1/chat/completions", b->dump(), "application/json"));
      });
    for (auto& t : warm) t.join();
  }
  burst();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const uint64_t rss_start = CurrentRssBytes();

  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<double> valid_ms, health_ms;
  size_t valid_ok = 0, valid_bad = 0, valid_429 = 0, health_fail = 0, after_error = 0, amplified = 0;
  size_t burst_200 = 0, burst_429 = 0, burst_other = 0;
  std::map<int, std::map<int, size_t>> hostile;  // kind -> first status -> count
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
        if (res && res->status == 429) {  // overload (the bursts): a client waits as told and retries
          EXPECT_EQ(res->get_header_value("Retry-After"), "1");
          {
            std::lock_guard lock(mu);
            ++valid_429;
          }
          std::this_thread::sleep_for(std::chrono::seconds(1));
          continue;
        }
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
  for (int h = 0; h < hostile_connections; ++h)
    threads.emplace_back([&, h] {
      std::mt19937 rng(h);
      for (int r = 0; !stop; ++r) {
        const int kind = (h + r) % kHostileKinds;
        const Outcome out = Hostile(port, kind, rng, valid_request);
        const int got = out.statuses.empty() ? 0 : out.statuses[0];
        // A chat request with a valid head meets the full queue during a burst: 429 is its answer then.
        const bool queued_kind = kind == 1 || kind == 2 || kind == 3 || kind == 5 || kind == 7 || kind == 8;
        const bool wrong = (got != out.expected && !(got == 429 && queued_kind)) || got == 500 ||
                           (kind == 16 && out.statuses != std::vector<int>{200, 400});
        std::lock_guard lock(mu);
        ++hostile[kind][got];
        after_error += ResponsesAfterError(out.statuses);
        amplified += !out.small;
        if (wrong) {
          ++hostile_wrong;
          ADD_FAILURE() << "hostile " << kKindNames[kind] << ": expected " << out.expected << ", got " << got << " ("
                        << out.statuses.size() << " responses)";
        }
      }
    });
  // Overload with the default --max-queue: every 30 s, 90 requests at once on top of the valid
  // clients; those beyond sessions + queue must be refused with 429, not queued without bound.
  threads.emplace_back([&] {
    for (double next = t_start + 5; !stop; next += 30) {
      while (!stop && NowSeconds() < next) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (stop) break;
      for (const int got : burst()) {
        std::lock_guard lock(mu);
        (got == 200 ? burst_200 : got == 429 ? burst_429 : burst_other)++;
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
  // Memory comes back once the hostile connections are gone (the server trims freed heap).
  uint64_t rss_after = CurrentRssBytes();
  for (int i = 0; i < 50 && rss_after > rss_start + rss_start / 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    rss_after = CurrentRssBytes();
  }

  std::printf("[ load ] %.0f s, 16 valid clients, %d hostile connections: %zu valid requests answered correctly, %zu wrong, "
              "%zu refused 429 and retried; latency p50 %.0f ms, p95 %.0f ms, max %.0f ms\n",
              wall, hostile_connections, valid_ok, valid_bad, valid_429, Percentile(valid_ms, 0.5), Percentile(valid_ms, 0.95),
              Percentile(valid_ms, 1.0));
  std::printf("[ load ] /health: %zu probes, %zu failed, p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", health_ms.size(),
              health_fail, Percentile(health_ms, 0.5), Percentile(health_ms, 0.99), Percentile(health_ms, 1.0));
  std::printf("[ load ] bursts of 90: %zu x 200, %zu x 429, %zu other\n", burst_200, burst_429, burst_other);
  for (const auto& [kind, codes] : hostile) {
    std::string s;
    for (const auto& [code, n] : codes) s += " " + std::to_string(code) + "x" + std::to_string(n);
    std::printf("[ load ] hostile %-15s:%s\n", kKindNames[kind], s.c_str());
  }
  std::printf("[ load ] responses after an error: %zu; amplified answers: %zu\n", after_error, amplified);
  std::printf("[ load ] RSS: %.1f MiB idle, %.1f MiB sampled peak, %.1f MiB after; %llu connections timed out\n",
              rss_start / 1048576.0, rss_peak_sampled / 1048576.0, rss_after / 1048576.0,
              static_cast<unsigned long long>(srv.reaped_connections()));
  EXPECT_GT(valid_ok, 0u);
  EXPECT_EQ(valid_bad, 0u);
  EXPECT_EQ(hostile_wrong, 0u);
  EXPECT_EQ(health_fail, 0u);
  EXPECT_EQ(after_error, 0u);
  EXPECT_EQ(amplified, 0u);
  EXPECT_GT(burst_429, 0u);
  EXPECT_EQ(burst_other, 0u);
  if (!test::kSanitized) {
    EXPECT_LT(Percentile(health_ms, 0.99), 100.0);
    // Body limits hold: the floods never make the server hold more than a few bodies' worth, and
    // what they made it allocate is handed back.
    EXPECT_LT(rss_peak_sampled, rss_start + (128u << 20));
    EXPECT_LT(rss_after, rss_start + rss_start / 10);
  } else {
    EXPECT_LT(Percentile(health_ms, 1.0), 1000.0);
  }
}

}  // namespace
}  // namespace fgemma::server
