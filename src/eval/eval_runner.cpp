#include "eval/eval_runner.h"

#include <unordered_map>

#include "util/process_stats.h"

namespace fgemma {

Result<EvalReport> RunEval(FunctionCaller& caller, const std::vector<EvalRow>& rows, const EvalOptions& options) {
  EvalReport report;
  report.options = options;
  report.rows.resize(rows.size());
  // Row indices grouped by tool list, lists in order of first appearance.
  std::unordered_map<std::string_view, size_t> group_of;
  std::vector<std::vector<size_t>> groups;
  for (size_t i = 0; i < rows.size(); ++i) {
    auto [it, added] = group_of.emplace(rows[i].tools_key, groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  const Json choice_value(options.tool_choice);
  const double start = NowSeconds();
  size_t done = 0;
  for (const auto& group : groups) {
    for (const size_t i : group) {
      const EvalRow& row = rows[i];
      const std::string where = "row at line " + std::to_string(row.line);
      auto choice = ParseToolChoice(choice_value, row.prompt.tools);
      if (!choice.ok()) return choice.status().WithContext(where + ": tool_choice");
      CallRequest request{.chat = row.prompt, .tool_choice = std::move(choice).value()};
      request.limits.max_tokens = options.max_tokens;
      request.unconstrained = options.unconstrained;
      const double t0 = NowSeconds();
      auto outcome = caller.Call(request);
      const double latency_ms = (NowSeconds() - t0) * 1000;
      if (!outcome.ok()) return outcome.status().WithContext(where);
      EvalRowResult& r = report.rows[i];
      r.line = row.line;
      r.row = &row;
      r.outcome = std::move(outcome).value();
      // The ids are not reported; a long evaluation should not keep every prompt.
      r.outcome.output_tokens = {};
      r.outcome.prompt_tokens = {};
      r.latency_ms = latency_ms;
      r.score = ScoreRow(row.expected, r.outcome.parsed, &report.totals.functions);
      AddScore(r.score, &report.totals);
      report.totals.prompt_tokens += r.outcome.timing.prompt_tokens;
      report.totals.generated_tokens += r.outcome.timing.generated_tokens;
      report.totals.passes += r.outcome.stats.model_calls;
      report.totals.drafted_tokens += r.outcome.stats.drafted_tokens;
      report.totals.accepted_tokens += r.outcome.stats.accepted_tokens;
      if (!r.outcome.timing.cache_hit) {
        ++report.catalogs;
        report.catalog_ms += r.outcome.timing.prefix_ms;
      } else if (r.outcome.timing.cache_source == "file") {
        ++report.catalogs_restored;
      }
      if (options.progress) options.progress(++done, rows.size());
    }
  }
  report.wall_s = NowSeconds() - start;
  return report;
}

}  // namespace fgemma
