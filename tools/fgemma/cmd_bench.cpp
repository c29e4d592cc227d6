// fgemma bench: load time, prefill tokens/s, decode ms/token at several contexts, peak RSS.
#include <algorithm>
#include <cstdio>

#include "bench_calls.h"
#include "command.h"
#include "number_options.h"
#include "lora_option.h"
#include "kernels/matmul.h"
#include "model/gemma3_forward.h"
#include "runtime/session.h"
#include "util/json.h"
#include "util/process_stats.h"

namespace fgemma::cli {
namespace {

struct BenchArgs {
  std::string model, lora;
  int threads = 0;
  bool json = false;
  std::vector<size_t> prefill = {64, 512};
  std::vector<size_t> decode_contexts = {64, 512, 2048};
  bool zero_fill = false;
  size_t decode_steps = 32;
  size_t repetitions = 3;
  std::vector<size_t> pass_rows;  // --pass-rows: time passes of these many rows at each decode context
  bool load_only = false;  // --load-only: open the model and a session, time nothing else
  CallBenchArgs calls;  // --calls: the function-call benchmark instead
};

// Deterministic pseudo-random ids, away from control tokens.
std::vector<int32_t> BenchTokens(size_t n, int vocab) {
  std::vector<int32_t> ids(n);
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (auto& id : ids) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    id = static_cast<int32_t>(256 + (s >> 33) % static_cast<uint64_t>(vocab - 256));
  }
  return ids;
}

// --calls: the function-call benchmark, with the model, threads and output format of bench.
int RunCallsInstead(const BenchArgs& a) {
  CallBenchArgs c = a.calls;
  c.model = a.model;
  c.threads = a.threads;
  c.json = a.json;
  if (c.tools.empty()) return Fail("--calls needs --tools");
  return c.clients.empty() ? RunCallBench(c) : RunClientsBench(c);
}

// The model and a session whose context holds the longest prefill, decode or pass run.
struct BenchSession {
  std::shared_ptr<const Model> model;
  std::unique_ptr<Session> session;
  size_t context = 0;
};

Result<BenchSession> OpenBenchSession(const BenchArgs& a) {
  // --threads 1 repacks on this thread too: the whole run is one thread (exact instruction counts
  // under qemu-user, scripts/arm-cost.sh).
  ModelLoadOptions mo;
  mo.prepare_threads = a.threads == 1 ? 1 : 2;
  FGEMMA_TRY(std::unique_ptr<Model> model, Model::Load(a.model, mo));
  BenchSession b;
  b.model = std::move(model);
  const size_t max_ctx = std::max(*std::max_element(a.decode_contexts.begin(), a.decode_contexts.end()),
                                  *std::max_element(a.prefill.begin(), a.prefill.end())) +
                         std::max(a.decode_steps, a.pass_rows.empty() ? size_t{0} : *std::max_element(a.pass_rows.begin(), a.pass_rows.end())) + 1;
  SessionOptions so;
  so.threads = a.threads;
  FGEMMA_TRY(so.lora, LoraAdapter::LoadFor(a.lora, *b.model));
  so.context = std::min<size_t>(max_ctx, static_cast<size_t>(b.model->config().max_position_embeddings));
  so.max_batch = 512;
  FGEMMA_TRY(b.session, Session::Create(b.model, so));
  b.context = so.context;
  return b;
}

struct BenchRow {
  std::string what;
  size_t n;
  double value;
  const char* unit;
  size_t rows = 0;  // pass_ms: rows of the pass
};

// Each figure is the median of its runs (a shared machine's outliers do not move it).
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Prefill: whole prompt in one call, head on the last position (as a real request does); the
// median of --repetitions runs.
Status TimePrefills(const BenchArgs& a, size_t context, const std::vector<int32_t>& tokens, Session& s,
                    std::vector<BenchRow>* rows) {
  for (size_t n : a.prefill) {
    if (n > context) continue;
    std::vector<double> rates;
    for (size_t rep = 0; rep < a.repetitions; ++rep) {
      s.Reset();
      HeadRequest h;
      h.index = n - 1;
      const double start = NowSeconds();
      Status st = s.Evaluate(std::span<const int32_t>(tokens.data(), n), std::span<HeadRequest>(&h, 1));
      const double dt = NowSeconds() - start;
      FGEMMA_RETURN_IF_ERROR(st);
      rates.push_back(static_cast<double>(n) / dt);
    }
    rows->push_back({"prefill_tok_per_s", n, Median(rates), "tok/s"});
  }
  return Status::Ok();
}

// Passes of R rows (what a drafted verification or a batch of sessions costs; issue 14): the
// body only, no head, at each decode context reached by zero-filling the KV cache (the same
// attention work as real keys). The median of --repetitions passes.
Status TimePasses(const BenchArgs& a, size_t context, const std::vector<int32_t>& tokens, Session& s,
                  std::vector<BenchRow>* rows) {
  for (size_t ctx : a.decode_contexts) {
    for (size_t r : a.pass_rows) {
      if (r == 0 || ctx + r > context) continue;
      std::vector<double> times;
      for (size_t rep = 0; rep < a.repetitions; ++rep) {
        s.Reset();
        FGEMMA_RETURN_IF_ERROR(s.JumpWithZeroState(ctx));
        const double start = NowSeconds();
        FGEMMA_RETURN_IF_ERROR(s.Evaluate(std::span<const int32_t>(tokens.data() + ctx, r)));
        times.push_back((NowSeconds() - start) * 1000.0);
      }
      rows->push_back({"pass_ms", ctx, Median(times), "ms", r});
    }
  }
  return Status::Ok();
}

// Decode: prefill (or zero-fill) to the context, then time greedy steps with the fused argmax
// head. Each step is timed; the figure is the median step.
Status TimeDecodes(const BenchArgs& a, size_t context, const std::vector<int32_t>& tokens, Session& s,
                   std::vector<BenchRow>* rows) {
  for (size_t ctx : a.decode_contexts) {
    if (ctx + a.decode_steps > context) continue;
    s.Reset();
    if (a.zero_fill) {
      FGEMMA_RETURN_IF_ERROR(s.JumpWithZeroState(ctx));
    } else {
      FGEMMA_RETURN_IF_ERROR(s.Evaluate(std::span<const int32_t>(tokens.data(), ctx)));
    }
    std::vector<double> times;
    int32_t next = tokens[ctx];
    for (size_t i = 0; i < a.decode_steps; ++i) {
      HeadRequest h;
      const double start = NowSeconds();
      FGEMMA_RETURN_IF_ERROR(s.Evaluate(std::span<const int32_t>(&next, 1), std::span<HeadRequest>(&h, 1)));
      times.push_back((NowSeconds() - start) * 1000.0);
      next = h.argmax;
    }
    rows->push_back({"decode_ms_per_token", ctx, Median(times), "ms"});
  }
  return Status::Ok();
}

// Load time and memory, in MiB, taken once the runs are done.
struct BenchFigures {
  double load_s = 0, peak_mb = 0, kv_sliding_mb = 0, kv_global_mb = 0, weights_mb = 0, repacked_mb = 0;
};

BenchFigures MeasureFigures(double load_s, const Model& m, const Session& s) {
  constexpr double kMiB = 1024.0 * 1024.0;
  return {load_s, static_cast<double>(PeakRssBytes()) / kMiB,
          static_cast<double>(s.kv_cache().bytes(LayerKind::kSliding)) / kMiB,
          static_cast<double>(s.kv_cache().bytes(LayerKind::kGlobal)) / kMiB, static_cast<double>(m.weight_bytes()) / kMiB,
          static_cast<double>(m.repacked_bytes()) / kMiB};
}

void PrintBenchJson(const BenchArgs& a, const BenchSession& b, const std::vector<BenchRow>& rows, const BenchFigures& f) {
  const Model& m = *b.model;
  const Session& s = *b.session;
  Json j = {{"model", a.model},
            {"config", m.config().name},
            {"weights", m.weight_type_name()},
            {"weight_mib", f.weights_mb},
            {"repacked_mib", f.repacked_mb},
            {"threads", s.pool().num_threads()},
            {"kernel", KernelTargetName()},
            {"load_s", f.load_s}};
  if (const LoraAdapter* l = s.lora())
    j["lora"] = {{"dir", l->dir()}, {"rank", l->rank()}, {"scale", l->scale()},
                 {"mib", static_cast<double>(l->bytes()) / (1024.0 * 1024.0)}};
  Json results = Json::array();
  for (const BenchRow& r : rows) {
    Json row = {{"metric", r.what}, {"n", r.n}, {"value", r.value}};
    if (r.rows) row["rows"] = r.rows;
    results.push_back(std::move(row));
  }
  j["results"] = std::move(results);
  j["kv_sliding_mib"] = f.kv_sliding_mb;
  j["kv_global_mib"] = f.kv_global_mb;
  j["context"] = b.context;
  j["peak_rss_mib"] = f.peak_mb;
  std::printf("%s\n", j.dump().c_str());
}

void PrintBenchText(const BenchArgs& a, const BenchSession& b, const std::vector<BenchRow>& rows, const BenchFigures& f) {
  const Model& m = *b.model;
  const Session& s = *b.session;
  std::printf("model     %s (%s, %s weights, %.1f MiB mapped)\n", a.model.c_str(), m.config().name.c_str(),
              m.weight_type_name().c_str(), f.weights_mb);
  if (const LoraAdapter* l = s.lora())
    std::printf("lora      %s (r %zu, scale %g, %zu modules, %.1f MiB float32)\n", l->dir().c_str(), l->rank(), l->scale(),
                l->target_modules().size(), static_cast<double>(l->bytes()) / (1024.0 * 1024.0));
  std::printf("threads   %d, kernels %s\n", s.pool().num_threads(), KernelTargetName());
  std::printf("load      %.3f s (%.1f MiB repacked)\n", f.load_s, f.repacked_mb);
  for (const auto& r : rows) {
    if (r.what == "prefill_tok_per_s")
      std::printf("prefill   %5zu tokens: %10.1f tok/s\n", r.n, r.value);
    else if (r.what == "pass_ms")
      std::printf("pass      ctx %5zu, %3zu rows: %8.2f ms (%.3f ms/row)\n", r.n, r.rows, r.value,
                  r.value / static_cast<double>(r.rows));
    else
      std::printf("decode    ctx %5zu:    %10.2f ms/token (%.1f tok/s)\n", r.n, r.value, 1000.0 / r.value);
  }
  std::printf("KV cache  %.1f MiB sliding (ring), %.1f MiB global, context %zu\n", f.kv_sliding_mb, f.kv_global_mb, b.context);
  std::printf("peak RSS  %.1f MiB\n", f.peak_mb);
}

int RunBench(const BenchArgs& a) {
  if (!a.calls.calls.empty()) return RunCallsInstead(a);
  // Model, adapter and session: the load time covers all three.
  const double t0 = NowSeconds();
  auto opened = OpenBenchSession(a);
  if (!opened.ok()) return Fail(opened.status().ToString());
  const double load_s = NowSeconds() - t0;
  const BenchSession& b = opened.value();
  Session& s = *b.session;
  const auto tokens = BenchTokens(b.context, b.model->config().vocab_size);
  // The timed runs, in the order of the report: prefill, passes, decode.
  std::vector<BenchRow> rows;
  Status st = Status::Ok();
  if (!a.load_only) st = TimePrefills(a, b.context, tokens, s, &rows);
  if (st.ok() && !a.load_only) st = TimePasses(a, b.context, tokens, s, &rows);
  if (st.ok() && !a.load_only) st = TimeDecodes(a, b.context, tokens, s, &rows);
  if (!st.ok()) return Fail(st.ToString());
  // Memory once the runs are done (the peak RSS includes them), then the report.
  const BenchFigures figures = MeasureFigures(load_s, *b.model, s);
  if (a.json) {
    PrintBenchJson(a, b, rows, figures);
  } else {
    PrintBenchText(a, b, rows, figures);
  }
  return 0;
}

const CommandRegistration kBench(40, [](CLI::App& app) -> std::function<int()> {
  auto a = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("bench", "Measure load time, prefill and decode speed, and peak RSS");
  cmd->add_option("--model", a->model, "model directory, .safetensors or .gguf")->required();
  AddLoraOption(cmd, &a->lora);
  AddThreadsOption(cmd, &a->threads, "threads (default: all cores)");
  cmd->add_flag("--json", a->json, "print one JSON object");
  cmd->add_option("--prefill", a->prefill, "prompt lengths to time (default 64 512)");
  cmd->add_option("--decode-contexts", a->decode_contexts, "contexts to time decode at (default 64 512 2048)");
  cmd->add_option("--decode-steps", a->decode_steps, "decode steps per context (default 32); the median step is reported");
  cmd->add_option("--repetitions", a->repetitions, "runs of each prefill; the median is reported (default 3)")
      ->check(CLI::Range(size_t{1}, size_t{1000}));
  cmd->add_option("--pass-rows", a->pass_rows,
                  "also time forward passes of these many rows (no head) at each decode context, reached by "
                  "zero-filling the KV cache; the median of --repetitions (e.g. --pass-rows 1 2 4 8 16 32 64)");
  cmd->add_flag("--load-only", a->load_only,
                "open the model and a session and report load time, repacked bytes and memory, nothing else (the "
                "weight preparation's cost: scripts/arm-cost.sh)");
  cmd->add_flag("--decode-zero-fill", a->zero_fill,
                "reach each decode context by zero-filling the KV cache instead of prefilling it (same decode "
                "work and memory, meaningless tokens; for long contexts on slow machines)");
  cmd->add_option("--calls", a->calls.calls,
                  "time warm function calls instead: JSON lines {\"utterance\", \"output\"} (each written as "
                  "`call --follow` does), with and without drafts (passes per call, p50/p95 latency)");
  cmd->add_option("--tools", a->calls.tools, "with --calls: the tool catalog");
  cmd->add_option("--tool-choice", a->calls.tool_choice, "with --calls: auto (default), required, none or a name");
  cmd->add_option("--rounds", a->calls.rounds, "with --calls: timed rounds over the set (default 3; one untimed first)")
      ->check(CLI::Range(size_t{1}, size_t{1000}));
  cmd->add_option("--max-draft", a->calls.max_draft, "with --calls: guessed tokens per pass (default: the library's)");
  cmd->add_option("--draft-lookups", a->calls.draft_lookups, "with --calls: draft lookups per pass (default: the library's)");
  cmd->add_option("--draft-guessers", a->calls.draft_guessers,
                  "with --calls: mask of the draft guesser's rules (1 chain, 2 words first, 4 named tool, 8 value "
                  "break, 16 string check, 32 close, 64 said value, 128 text end, 256 slots, 512 lists, 1024 digit form, 2048 "
                  "string start, 4096 short name parts; default all)");
  cmd->add_flag("--no-prompt-reuse", a->calls.no_prompt_reuse,
                "with --calls: every call restores the whole catalog state and evaluates its whole turn (for comparison)");
  cmd->add_flag("--own-calls", a->calls.own_calls,
                "with --calls: the model writes its own calls (the set's outputs are ignored: a trained model) and prints them");
  cmd->add_option("--tokenizer", a->calls.tokenizer, "with --calls: tokenizer.json instead of the model's own vocabulary");
  cmd->add_flag("--trace-drafts", a->calls.trace_drafts,
                "with --calls: print every drafted pass of the first timed round (stderr) and a per-source summary");
  cmd->add_option("--clients", a->calls.clients,
                  "with --calls: serve the set from N concurrent callers (one per client, as the server's sessions), "
                  "with and without batched passes; several counts: --clients 1,4,8")
      ->delimiter(',')
      ->check(CLI::Range(size_t{1}, size_t{64}));
  return [a] { return RunBench(*a); };
});

}  // namespace
}  // namespace fgemma::cli
