// `fgemma eval`: runs evaluation rows through a FunctionCaller and scores them (eval_score.h).
//
// Rows are run grouped by their tool list (EvalRow::tools_key, in the order each list first
// appears), so the caller's in-memory catalog state is built once per distinct list and restored
// for every other row that shares it: one catalog prefill per list, the cost an app pays once per
// catalog. Results come back in file order whatever the running order.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "eval/eval_data.h"
#include "eval/eval_score.h"
#include "runtime/function_caller.h"

namespace fgemma {

struct EvalOptions {
  std::string tool_choice = "auto";  // "auto" or "required" (any tool_choice the caller accepts works)
  bool unconstrained = false;        // CallRequest::unconstrained
  size_t max_tokens = 0;             // per row; 0: the caller's cap
  // Called after each row with (rows done, rows in all); for progress bars.
  std::function<void(size_t, size_t)> progress;
};

struct EvalRowResult {
  size_t line = 0;
  const EvalRow* row = nullptr;  // the row scored (owned by the caller of RunEval)
  CallOutcome outcome;           // the generated answer; output and prompt ids are dropped
  RowScore score;
  double latency_ms = 0;         // the whole call (render, catalog prefill or restore, decode)
};

struct EvalReport {
  EvalOptions options;
  std::vector<EvalRowResult> rows;  // in file order
  EvalTotals totals;
  double wall_s = 0;                // all rows, catalog prefills included
  size_t catalogs = 0;              // catalog states built (one per distinct tool list)
  size_t catalogs_restored = 0;     // catalog states read from the cache directory instead
  double catalog_ms = 0;            // spent building catalog states
  // What was evaluated, for the report only (set by the front end; "" = not printed).
  std::string model, data, split;
  // Names the fine-tuned variant evaluated (a LoRA adapter, once fgemma has them); "" for none.
  std::string adapter;
};

// Runs every row; the first row the engine refuses (a prompt too long for the context, ...)
// stops the evaluation with an error naming its line.
Result<EvalReport> RunEval(FunctionCaller& caller, const std::vector<EvalRow>& rows, const EvalOptions& options);

// The report as one JSON object (fields documented in docs/eval.md).
Json EvalReportToJson(const EvalReport& report);
// One row of --out: {"line", "expected", "got", "exact", ...}.
Json EvalRowToJson(const EvalRowResult& row);
// The human-readable report: the figures, then the per-function table.
std::string EvalReportText(const EvalReport& report);

}  // namespace fgemma
