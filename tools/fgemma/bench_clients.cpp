// fgemma bench --calls --clients N[,N...]: the call set served to N concurrent clients, each with a
// caller of its own (as `fgemma serve --sessions N` gives each request in flight), all on one
// thread pool, with and without batched passes (runtime/pass_batcher.h). Every call is written
// as its "output" (FollowText, see bench_calls.cpp), with drafts on (the shipping configuration).
// Each client runs the whole set `rounds` times starting at its own offset (clients are out of
// step, as real ones are) after one untimed round that builds its catalog state. Reports calls/s
// over the wall time of the timed rounds, p50/p95 latency per call, and passes per call.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>

#include "bench_calls.h"
#include "call_common.h"
#include "command.h"
#include "kernels/matmul.h"
#include "runtime/follow_text.h"
#include "runtime/engine.h"
#include "runtime/pass_batcher.h"
#include "util/json.h"
#include "util/process_stats.h"

namespace fgemma::cli {
namespace {

struct ClientsResult {
  double calls_per_s = 0, p50_ms = 0, p95_ms = 0, passes_per_call = 0, rows_per_pass = 0;
  size_t calls = 0;
};

Result<ClientsResult> Serve(Engine& engine, const std::vector<BenchCase>& cases,
                            const std::vector<CallRequest>& requests, const CallBenchArgs& a, size_t clients,
                            bool batch) {
  EngineConfig config;
  config.threads = a.threads;
  config.reuse_prompt = !a.no_prompt_reuse;
  config.share_passes = batch;
  std::vector<std::unique_ptr<FunctionCaller>> callers;
  for (size_t c = 0; c < clients; ++c) {
    FGEMMA_TRY(auto caller, engine.NewCaller(config));
    callers.push_back(std::move(caller));
  }
  const std::shared_ptr<PassBatcher> batcher = engine.PassGroup(config);  // null without batching
  const size_t n = cases.size();
  std::vector<std::vector<double>> latencies(clients);
  std::vector<size_t> passes(clients, 0);
  std::vector<Status> errors(clients);
  auto run_client = [&](size_t c, size_t rounds, bool timed) {
    FunctionCaller& caller = *callers[c];
    for (size_t r = 0; r < rounds; ++r) {
      for (size_t k = 0; k < n; ++k) {
        const size_t i = (k + c * 7) % n;  // each client at its own offset
        FollowText follow(caller.constraint_vocab(), cases[i].output);
        caller.set_choice_hook(&follow);
        auto outcome = caller.Call(requests[i]);
        caller.set_choice_hook(nullptr);
        if (!outcome.ok()) {
          errors[c] = outcome.status();
          return;
        }
        if (!timed) continue;
        latencies[c].push_back(outcome->timing.total_ms);
        passes[c] += outcome->stats.model_calls;
      }
    }
  };
  auto run_all = [&](size_t rounds, bool timed) {
    std::vector<std::thread> threads;
    for (size_t c = 0; c < clients; ++c) threads.emplace_back(run_client, c, rounds, timed);
    for (auto& t : threads) t.join();
  };
  run_all(1, false);  // warm: each caller builds its catalog state and draft history
  const PassBatcher::Stats before = batcher ? batcher->stats() : PassBatcher::Stats{};
  const double t0 = NowSeconds();
  run_all(a.rounds, true);
  const double wall = NowSeconds() - t0;
  for (const Status& st : errors)
    if (!st.ok()) return st;
  ClientsResult out;
  std::vector<double> all;
  size_t total_passes = 0;
  for (size_t c = 0; c < clients; ++c) {
    all.insert(all.end(), latencies[c].begin(), latencies[c].end());
    total_passes += passes[c];
  }
  out.calls = all.size();
  out.calls_per_s = static_cast<double>(out.calls) / wall;
  out.p50_ms = Percentile(all, 0.5);
  out.p95_ms = Percentile(all, 0.95);
  out.passes_per_call = static_cast<double>(total_passes) / static_cast<double>(out.calls);
  if (batcher) {
    const PassBatcher::Stats st = batcher->stats();
    // Passes over the weights the batcher really ran, per call (each call's own count above
    // counts every pass it took part in).
    out.passes_per_call = static_cast<double>(st.passes - before.passes) / static_cast<double>(out.calls);
    out.rows_per_pass = static_cast<double>(st.rows - before.rows) / static_cast<double>(st.passes - before.passes);
  }
  return out;
}

}  // namespace

int RunClientsBench(const CallBenchArgs& a) {
  auto cases = ReadBenchCases(a.calls);
  if (!cases.ok()) return Fail(cases.status().ToString());
  auto engine = Engine::Load(a.model, LoadOptions{});
  if (!engine.ok()) return Fail(engine.status().ToString());
  auto requests = BenchRequests(a, cases.value());
  if (!requests.ok()) return Fail(requests.status().ToString());
  Json rows = Json::array();
  if (!a.json)
    std::printf("%zu calls x %zu rounds per client, warm, drafts on, tool_choice %s, kernels %s, %d threads\n"
                "%-8s %-9s %8s %9s %9s %13s %13s\n",
                cases->size(), a.rounds, a.tool_choice.c_str(), KernelTargetName(), a.threads, "clients", "batching",
                "calls/s", "p50 ms", "p95 ms", "passes/call", "rows/pass");
  for (size_t clients : a.clients) {
    for (bool batch : {false, true}) {
      if (batch && clients == 1) continue;  // one client has nobody to share a pass with
      auto r = Serve(*engine.value(), cases.value(), requests.value(), a, clients, batch);
      if (!r.ok()) return Fail(r.status().ToString());
      rows.push_back({{"clients", clients},
                      {"batching", batch},
                      {"calls", r->calls},
                      {"calls_per_s", r->calls_per_s},
                      {"p50_ms", r->p50_ms},
                      {"p95_ms", r->p95_ms},
                      {"passes_per_call", r->passes_per_call},
                      {"rows_per_pass", batch ? Json(r->rows_per_pass) : Json(nullptr)}});
      if (!a.json) {
        std::printf("%-8zu %-9s %8.2f %9.1f %9.1f %13.2f %13s\n", clients, batch ? "on" : "off", r->calls_per_s, r->p50_ms,
                    r->p95_ms, r->passes_per_call, batch ? std::to_string(r->rows_per_pass).substr(0, 5).c_str() : "-");
        std::fflush(stdout);
      }
    }
  }
  if (a.json)
    std::printf("%s\n", Json({{"model", a.model}, {"calls_file", a.calls}, {"distinct_calls", cases->size()},
                              {"rounds", a.rounds}, {"threads", a.threads}, {"kernels", KernelTargetName()},
                              {"tool_choice", a.tool_choice}, {"clients", rows}})
                            .dump()
                            .c_str());
  return 0;
}

}  // namespace fgemma::cli
