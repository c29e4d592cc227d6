// fgemma bench --calls: each call of the set is written as its "output" (FollowText, as
// `fgemma call --follow` does: on random weights the argmax writes noise, and a real call's cost is
// that of the path a real checkpoint takes), warm (the catalog prefix restored from memory), by one
// caller per mode, the two modes alternating call by call. A caller keeps its last 8 outputs as draft sources; the set is run in order, so
// with more than 8 calls a call never finds its own output there, only other commands'. One round
// over the set is untimed (it builds the catalog state and fills the history), then `rounds` are
// timed; passes, drafted and accepted tokens are per call, latencies are FunctionCaller's total_ms.
#include "bench_calls.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <memory>

#include "call_common.h"
#include "command.h"
#include "kernels/matmul.h"
#include "runtime/follow_text.h"
#include "runtime/loaded_model.h"
#include "util/json.h"
#include "util/mapped_file.h"

namespace fgemma::cli {
namespace {

double ProcessCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

struct ModeResult {
  std::vector<double> ms, cpu_ms;
  size_t calls = 0, tokens = 0, passes = 0, drafted = 0, accepted = 0;
};

}  // namespace

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

Result<std::vector<BenchCase>> ReadBenchCases(const std::string& path) {
  FGEMMA_TRY(std::string text, ReadFileToString(path));
  std::vector<BenchCase> cases;
  size_t at = 0, line = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    ++line;
    const std::string row = text.substr(at, end - at);
    at = end + 1;
    if (row.find_first_not_of(" \t\r") == std::string::npos) continue;
    const Json j = Json::parse(row, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("utterance") || !j["utterance"].is_string() ||
        !j.contains("output") || !j["output"].is_string())
      return InvalidArgument(path + ": line " + std::to_string(line) + ": expected {\"utterance\": string, \"output\": string}");
    cases.push_back({j["utterance"].get<std::string>(), j["output"].get<std::string>()});
  }
  if (cases.empty()) return InvalidArgument(path + ": no calls");
  return cases;
}

Result<std::vector<CallRequest>> BenchRequests(const CallBenchArgs& a, const std::vector<BenchCase>& cases) {
  std::vector<CallRequest> requests;
  for (const BenchCase& c : cases) {
    CallInputs in;
    in.tools_path = a.tools;
    in.utterance = c.utterance;
    in.tool_choice = a.tool_choice;
    FGEMMA_TRY(CallRequest request, BuildCallRequest(in));
    requests.push_back(std::move(request));
  }
  return requests;
}

int RunCallBench(const CallBenchArgs& a) {
  auto cases = ReadBenchCases(a.calls);
  if (!cases.ok()) return Fail(cases.status().ToString());
  auto loaded = LoadModel(a.model, LoadOptions{});
  if (!loaded.ok()) return Fail(loaded.status().ToString());
  // Both modes side by side, call by call (one caller each), so load on a shared machine falls on
  // both alike.
  std::unique_ptr<FunctionCaller> callers[2];
  ModeResult results[2];
  for (int d = 0; d < 2; ++d) {
    FunctionCallerOptions fo;
    fo.threads = a.threads;
    fo.decoding.draft = d == 1;
    auto caller = FunctionCaller::Create(loaded.value(), fo);
    if (!caller.ok()) return Fail(caller.status().ToString());
    callers[d] = std::move(caller).value();
  }
  auto requests = BenchRequests(a, cases.value());
  if (!requests.ok()) return Fail(requests.status().ToString());
  for (size_t round = 0; round <= a.rounds; ++round) {
    for (size_t i = 0; i < cases->size(); ++i) {
      const BenchCase& c = cases.value()[i];
      for (int d = 0; d < 2; ++d) {
        FunctionCaller& caller = *callers[d];
        ModeResult& r = results[d];
        FollowText follow(caller.constraint_vocab(), c.output);
        caller.set_choice_hook(&follow);
        const double cpu0 = ProcessCpuMs();
        auto outcome = caller.Call(requests.value()[i]);
        const double cpu = ProcessCpuMs() - cpu0;
        caller.set_choice_hook(nullptr);
        if (!outcome.ok()) return Fail("'" + c.utterance + "': " + outcome.status().ToString());
        if (round == 0) continue;
        r.ms.push_back(outcome->timing.total_ms);
        r.cpu_ms.push_back(cpu);
        ++r.calls;
        r.tokens += outcome->output_tokens.size();
        r.passes += outcome->stats.model_calls;
        r.drafted += outcome->stats.drafted_tokens;
        r.accepted += outcome->stats.accepted_tokens;
      }
    }
  }
  Json modes = Json::object();
  for (int d = 0; d < 2; ++d) {
    const ModeResult& r = results[d];
    const double n = static_cast<double>(r.calls);
    modes[d == 1 ? "draft" : "no_draft"] = {{"calls", r.calls},
                                           {"tokens_per_call", static_cast<double>(r.tokens) / n},
                                           {"passes_per_call", static_cast<double>(r.passes) / n},
                                           {"drafted_per_call", static_cast<double>(r.drafted) / n},
                                           {"accepted_per_call", static_cast<double>(r.accepted) / n},
                                           {"p50_ms", Percentile(r.ms, 0.5)},
                                           {"p95_ms", Percentile(r.ms, 0.95)},
                                           {"cpu_p50_ms", Percentile(r.cpu_ms, 0.5)},
                                           {"mean_ms", [&] {
                                              double s = 0;
                                              for (double v : r.ms) s += v;
                                              return s / n;
                                            }()}};
  }
  const Json out = {{"model", a.model}, {"calls_file", a.calls}, {"distinct_calls", cases->size()},
                    {"rounds", a.rounds}, {"threads", a.threads}, {"kernels", KernelTargetName()},
                    {"tool_choice", a.tool_choice}, {"modes", modes}};
  if (a.json) {
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  std::printf("%zu calls x %zu rounds, warm, tool_choice %s, kernels %s\n", cases->size(), a.rounds,
              a.tool_choice.c_str(), KernelTargetName());
  std::printf("%-9s %8s %8s %8s %8s %9s %9s %9s\n", "mode", "tokens", "passes", "drafted", "accepted", "p50 ms", "p95 ms",
              "cpu p50");
  for (const char* m : {"no_draft", "draft"}) {
    const Json& j = modes[m];
    std::printf("%-9s %8.2f %8.2f %8.2f %8.2f %9.1f %9.1f %9.1f\n", m, j["tokens_per_call"].get<double>(),
                j["passes_per_call"].get<double>(), j["drafted_per_call"].get<double>(),
                j["accepted_per_call"].get<double>(), j["p50_ms"].get<double>(), j["p95_ms"].get<double>(),
                j["cpu_p50_ms"].get<double>());
  }
  return 0;
}

}  // namespace fgemma::cli
