// fgemma eval: scores a model on function-calling rows in the Mobile Actions JSONL layout
// (eval/eval_*.h hold the parsing, running and scoring; this file only wires the flags).
#include <cstdio>

#include "command.h"
#include "number_options.h"
#include "lora_option.h"
#include "progress_bar.h"
#include "eval/eval_runner.h"
#include "runtime/engine.h"
#include "util/file_replace.h"

namespace fgemma::cli {
namespace {

struct EvalArgs {
  std::string model, data, tokenizer, out, lora, cache_dir;
  EvalSelection selection;
  EvalOptions options;
  int threads = 0;
  size_t context = 4096;
  bool json = false;
};

Status WriteRows(const std::string& path, const EvalReport& report) {
  std::string text;
  for (const auto& row : report.rows) text += EvalRowToJson(row).dump() + "\n";
  return ReplaceFileContents(path, text);
}

int RunEval(const EvalArgs& a) {
  // Refused before any work: an --out that cannot be replaced would only fail at the end.
  if (!a.out.empty()) {
    if (Status st = CheckReplaceableFile(a.out); !st.ok()) return Fail("--out: " + st.ToString());
  }
  auto rows = ReadEvalData(a.data, a.selection);
  if (!rows.ok()) return Fail(rows.status().ToString());
  EngineConfig config;
  config.threads = a.threads;
  config.context = a.context;
  config.cache_dir = a.cache_dir;
  // A fine-tune shipped as an adapter is evaluated over the base, as the app will run it.
  auto lora = AdapterSpecOf(a.lora);
  if (!lora.ok()) return Fail(lora.status().ToString());
  config.lora = lora.value();
  auto engine = Engine::Load(a.model, LoadOptions{.tokenizer_path = a.tokenizer}, config);
  if (!engine.ok()) return Fail(engine.status().ToString());
  auto caller = engine.value()->NewCaller();
  if (!caller.ok()) return Fail(caller.status().ToString());

  ItemProgressBar bar("rows");
  EvalOptions options = a.options;
  options.progress = [&bar](size_t done, size_t total) { bar.Update(done, total); };
  auto report = fgemma::RunEval(*caller.value(), rows.value(), options);
  bar.Finish();
  for (const auto& w : caller.value()->TakeWarnings()) std::fprintf(stderr, "fgemma: warning: %s\n", w.c_str());
  if (!report.ok()) return Fail(a.data + ": " + report.status().ToString());
  report->model = a.model;
  report->data = a.data;
  report->split = a.selection.split;
  report->adapter = a.lora;
  if (!a.out.empty()) {
    if (Status st = WriteRows(a.out, report.value()); !st.ok()) return Fail("--out: " + st.ToString());
  }
  if (a.json) {
    std::printf("%s\n", EvalReportToJson(report.value()).dump().c_str());
  } else {
    std::printf("%s", EvalReportText(report.value()).c_str());
  }
  return 0;
}

const CommandRegistration kEval(55, [](CLI::App& app) -> std::function<int()> {
  auto a = std::make_shared<EvalArgs>();
  auto* cmd = app.add_subcommand("eval", "Score function calling on rows in the Mobile Actions JSONL layout");
  cmd->add_option("--model", a->model, "model directory, .safetensors or .gguf")->required();
  cmd->add_option("--data", a->data, "JSONL file: {metadata, tools, messages} per line")->required();
  AddLoraOption(cmd, &a->lora);
  cmd->add_option("--split", a->selection.split, "rows whose metadata is train, eval (default) or all");
  cmd->add_option("--limit", a->selection.limit, "only the first N selected rows (default 0: all)");
  cmd->add_option("--tool-choice", a->options.tool_choice, "auto (default) or required")
      ->check(CLI::IsMember({"auto", "required"}));
  cmd->add_flag("--unconstrained", a->options.unconstrained,
                "decode freely (no grammar) and parse the text afterwards, as other engines do");
  cmd->add_option("--max-tokens", a->options.max_tokens, "generated tokens per row (default 1024)");
  cmd->add_flag("--json", a->json, "print the report as one JSON object");
  cmd->add_option("--out", a->out, "write one JSON object per row (expected, got, match flags, latency) to this file");
  AddThreadsOption(cmd, &a->threads, "threads (default: all cores)");
  cmd->add_option("--context", a->context, "positions per row (default 4096)");
  cmd->add_option("--tokenizer", a->tokenizer, "tokenizer.json or directory (default: beside the model / in the GGUF)");
  cmd->add_option("--cache-dir", a->cache_dir,
                  "keep each catalog's prefilled state in this directory (one file a catalog, bound to the model, "
                  "adapter and thread count): a later eval restores it instead of prefilling again");
  return [a] { return RunEval(*a); };
});

}  // namespace
}  // namespace fgemma::cli
