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
#include <string>

#include "call_common.h"
#include "command.h"
#include "kernels/matmul.h"
#include "runtime/follow_text.h"
#include "runtime/engine.h"
#include "util/json.h"
#include "util/mapped_file.h"

namespace fgemma::cli {
namespace {

double ProcessCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

// Per-source totals of a draft trace (--trace-drafts).
struct DraftTally {
  size_t passes = 0, guessing_passes = 0, wasted_passes = 0, positions = 0, rewound = 0;
  size_t full_heads = 0, full_heads_unused = 0, guessed_full = 0;
  size_t guessed[kDraftSourceCount] = {}, accepted[kDraftSourceCount] = {}, first_miss[kDraftSourceCount] = {};
};

std::string Escaped(std::string_view s) {
  std::string out;
  for (char c : s) out += c == '\n' ? std::string("\\n") : std::string(1, c);
  return out;
}

void TracePass(const DraftPassTrace& t, const ConstraintVocab& vocab, DraftTally* tally) {
  DraftTally& y = *tally;
  ++y.passes;
  y.positions += t.batch;
  y.rewound += t.batch - t.kept;
  if (!t.guesses.empty()) ++y.guessing_passes;
  if (!t.guesses.empty() && t.accepted == 0) ++y.wasted_passes;
  for (size_t k = 0; k < t.full_heads.size(); ++k) {
    if (!t.full_heads[k]) continue;
    ++y.full_heads;
    if (k > t.accepted) ++y.full_heads_unused;
    if (k < t.guesses.size()) ++y.guessed_full;
  }
  const std::string_view w = t.written;
  std::string line = "  pass: ..." + Escaped(w.substr(w.size() > 40 ? w.size() - 40 : 0)) + " |";
  for (size_t k = 0; k < t.guesses.size(); ++k) {
    const size_t src = static_cast<size_t>(t.sources[k]);
    ++y.guessed[src];
    if (k < t.accepted) ++y.accepted[src];
    if (k == t.accepted) ++y.first_miss[src];
    line += k < t.accepted ? " +" : " -";
    line += Escaped(vocab.TokenText(t.guesses[k]));
    line += "/";
    line += DraftSourceName(t.sources[k]);
    if (k < t.full_heads.size() && t.full_heads[k]) line += "(full)";
  }
  std::fprintf(stderr, "%s | accepted %zu/%zu, batch %zu, kept %zu | ms: guess %.2f heads %.2f model %.2f read %.2f\n",
               line.c_str(), t.accepted, t.guesses.size(), t.batch, t.kept, t.guess_ms, t.heads_ms, t.model_ms, t.read_ms);
}

void PrintTally(const DraftTally& y, size_t calls) {
  const double n = static_cast<double>(std::max<size_t>(calls, 1));
  std::fprintf(stderr,
               "drafted passes per call %.2f: %.2f with a guess, %.2f wasted (nothing confirmed); positions per call %.2f, "
               "%.2f rewound; whole-vocabulary heads per call %.2f (%.2f unused, %.2f verifying a guess)\n",
               y.passes / n, y.guessing_passes / n, y.wasted_passes / n, y.positions / n, y.rewound / n, y.full_heads / n,
               y.full_heads_unused / n, y.guessed_full / n);
  std::fprintf(stderr, "%-14s %9s %9s %9s %11s\n", "source", "guessed", "accepted", "rate", "first miss");
  for (size_t i = 0; i < kDraftSourceCount; ++i) {
    if (y.guessed[i] == 0) continue;
    std::fprintf(stderr, "%-14s %9.2f %9.2f %8.0f%% %11.2f\n", DraftSourceName(static_cast<DraftSource>(i)), y.guessed[i] / n,
                 y.accepted[i] / n, 100.0 * static_cast<double>(y.accepted[i]) / static_cast<double>(y.guessed[i]),
                 y.first_miss[i] / n);
  }
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

namespace {

// The two callers, [0] without drafts and [1] with them, and the draft trace of the first timed
// round (--trace-drafts). Not movable: the trace callback holds its address.
struct BenchCallers {
  std::unique_ptr<FunctionCaller> callers[2];
  DraftTally tally;
  bool tracing = false;  // the first timed round, with --trace-drafts
};

Status MakeCallers(Engine& engine, const CallBenchArgs& a, BenchCallers* b) {
  for (int d = 0; d < 2; ++d) {
    EngineConfig config;
    config.threads = a.threads;
    config.reuse_prompt = !a.no_prompt_reuse;
    config.decoding.draft = d == 1;
    if (a.max_draft > 0) config.decoding.max_draft = a.max_draft;
    if (a.draft_lookups > 0) config.decoding.draft_lookups = a.draft_lookups;
    if (a.draft_guessers >= 0) config.decoding.draft_guessers = static_cast<uint32_t>(a.draft_guessers);
    if (a.trace_drafts && d == 1) {
      config.decoding.on_draft_pass = [b](const DraftPassTrace& t) {
        if (b->tracing) TracePass(t, b->callers[1]->constraint_vocab(), &b->tally);
      };
    }
    FGEMMA_TRY(b->callers[d], engine.NewCaller(config));
  }
  return Status::Ok();
}

// One call, written as the case's output (unless --own-calls); `cpu_ms` gets the process CPU time
// it took.
Result<CallOutcome> WriteCall(const CallBenchArgs& a, FunctionCaller& caller, const BenchCase& c,
                              const CallRequest& request, double* cpu_ms) {
  FollowText follow(caller.constraint_vocab(), c.output);
  if (!a.own_calls) caller.set_choice_hook(&follow);
  const double cpu0 = ProcessCpuMs();
  auto outcome = caller.Call(request);
  *cpu_ms = ProcessCpuMs() - cpu0;
  caller.set_choice_hook(nullptr);
  return outcome;
}

void CountCall(const CallOutcome& outcome, double cpu_ms, ModeResult* r) {
  r->ms.push_back(outcome.timing.total_ms);
  r->cpu_ms.push_back(cpu_ms);
  ++r->calls;
  r->tokens += outcome.output_tokens.size();
  r->passes += outcome.stats.model_calls;
  r->drafted += outcome.stats.drafted_tokens;
  r->accepted += outcome.stats.accepted_tokens;
}

// Round `round` over the set (0: untimed), the two modes alternating call by call; returns the
// exit code of a failed call, or 0.
int RunRound(const CallBenchArgs& a, size_t round, const std::vector<BenchCase>& cases,
             const std::vector<CallRequest>& requests, BenchCallers* b, ModeResult results[2]) {
  for (size_t i = 0; i < cases.size(); ++i) {
    const BenchCase& c = cases[i];
    for (int d = 0; d < 2; ++d) {
      b->tracing = a.trace_drafts && round == 1 && d == 1;
      if (b->tracing) std::fprintf(stderr, "call %zu: %s\n", i, c.utterance.c_str());
      double cpu = 0;
      auto outcome = WriteCall(a, *b->callers[d], c, requests[i], &cpu);
      if (!outcome.ok()) return Fail("'" + c.utterance + "': " + outcome.status().ToString());
      if (b->tracing) {
        std::fprintf(stderr, "  = %zu passes, %zu guessed, %zu confirmed\n", outcome->stats.model_calls,
                     outcome->stats.drafted_tokens, outcome->stats.accepted_tokens);
      }
      if (a.own_calls && round == 1 && d == 1 && !a.json) {
        std::printf("%s -> %s\n", c.utterance.c_str(), CallOutcomeToJson(outcome.value())["calls"].dump().c_str());
      }
      if (round > 0) CountCall(outcome.value(), cpu, &results[d]);
    }
  }
  return 0;
}

// Per-call means and latency percentiles of each mode, keyed no_draft and draft.
Json ModesJson(const ModeResult results[2]) {
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
  return modes;
}

void PrintModesTable(const CallBenchArgs& a, size_t distinct_calls, const Json& modes) {
  std::printf("%zu calls x %zu rounds, warm, tool_choice %s, kernels %s\n", distinct_calls, a.rounds,
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
}

}  // namespace

int RunCallBench(const CallBenchArgs& a) {
  // The set of calls and the engine that serves them.
  auto cases = ReadBenchCases(a.calls);
  if (!cases.ok()) return Fail(cases.status().ToString());
  auto engine = Engine::Load(a.model, LoadOptions{.tokenizer_path = a.tokenizer});
  if (!engine.ok()) return Fail(engine.status().ToString());
  // Both modes side by side, call by call (one caller each), so load on a shared machine falls on
  // both alike.
  BenchCallers callers;
  if (Status st = MakeCallers(*engine.value(), a, &callers); !st.ok()) return Fail(st.ToString());
  auto requests = BenchRequests(a, cases.value());
  if (!requests.ok()) return Fail(requests.status().ToString());
  // One untimed round (it builds the catalog state and fills the history), then the timed ones.
  ModeResult results[2];
  for (size_t round = 0; round <= a.rounds; ++round) {
    if (int code = RunRound(a, round, cases.value(), requests.value(), &callers, results); code != 0) return code;
  }
  if (a.trace_drafts) PrintTally(callers.tally, cases->size());
  // The report: one JSON object, or a table.
  const Json modes = ModesJson(results);
  if (a.json) {
    const Json out = {{"model", a.model}, {"calls_file", a.calls}, {"distinct_calls", cases->size()},
                      {"rounds", a.rounds}, {"threads", a.threads}, {"kernels", KernelTargetName()},
                      {"tool_choice", a.tool_choice}, {"modes", modes}};
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  PrintModesTable(a, cases->size(), modes);
  return 0;
}

}  // namespace fgemma::cli
