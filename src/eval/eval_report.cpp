// The eval report as JSON (`fgemma eval --json`, docs/eval.md) and as text.
#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "eval/eval_runner.h"

namespace fgemma {
namespace {

// null when there is nothing to divide (a rate over no rows is not 0 %).
Json Rate(size_t count, size_t total) { return total == 0 ? Json(nullptr) : Json(static_cast<double>(count) / static_cast<double>(total)); }

Json Fraction(size_t count, size_t total) { return {{"count", count}, {"total", total}, {"rate", Rate(count, total)}}; }

// Argument pairs: counts, precision (of the generated) and recall (of the expected).
Json ArgumentsJson(size_t expected, size_t generated, size_t matched) {
  return {{"expected", expected},
          {"generated", generated},
          {"matched", matched},
          {"precision", Rate(matched, generated)},
          {"recall", Rate(matched, expected)}};
}

Json Latency(const std::vector<double>& ms) {
  if (ms.empty()) return nullptr;
  double sum = 0, max = 0;
  for (double v : ms) {
    sum += v;
    max = std::max(max, v);
  }
  return {{"p50", Percentile(ms, 50)}, {"p95", Percentile(ms, 95)}, {"mean", sum / static_cast<double>(ms.size())}, {"max", max}};
}

Json CallsJson(const std::vector<ExpectedCall>& calls) {
  Json out = Json::array();
  for (const auto& c : calls) out.push_back({{"name", c.name}, {"arguments", c.arguments}});
  return out;
}

Json CallsJson(const std::vector<ParsedCall>& calls) {
  Json out = Json::array();
  for (const auto& c : calls) {
    Json call = {{"name", c.name}, {"arguments", c.arguments}};
    if (!c.errors.empty()) call["errors"] = c.errors;
    out.push_back(std::move(call));
  }
  return out;
}

Json TextOrNull(const std::string& text) { return text.empty() ? Json(nullptr) : Json(text); }

void Latencies(const EvalReport& r, std::vector<double>* all, std::vector<double>* warm) {
  for (const auto& row : r.rows) {
    all->push_back(row.latency_ms);
    if (row.outcome.timing.cache_hit) warm->push_back(row.latency_ms);
  }
}

std::string Percent(size_t count, size_t total) {
  if (total == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * static_cast<double>(count) / static_cast<double>(total));
  return buf;
}

std::string Format(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string Format(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

}  // namespace

Json EvalReportToJson(const EvalReport& r) {
  const EvalTotals& t = r.totals;
  std::vector<double> all, warm;
  Latencies(r, &all, &warm);
  Json functions = Json::array();
  for (const auto& [name, f] : t.functions) {
    functions.push_back({{"name", name},
                         {"expected", f.expected},
                         {"generated", f.generated},
                         {"name_matched", f.name_matched},
                         {"name_precision", Rate(f.name_matched, f.generated)},
                         {"name_recall", Rate(f.name_matched, f.expected)},
                         {"exact", f.exact},
                         {"exact_rate", Rate(f.exact, f.expected)},
                         {"arguments", ArgumentsJson(f.args_expected, f.args_generated, f.args_matched)}});
  }
  Json j = {{"rows", t.rows},
            {"call_rows", t.call_rows},
            {"no_call_rows", t.no_call_rows},
            {"tool_choice", r.options.tool_choice},
            {"constrained", !r.options.unconstrained},
            {"exact_match", Fraction(t.exact, t.rows)},
            {"call_exact_match", Fraction(t.call_rows_exact, t.call_rows)},
            {"function_name", Fraction(t.names, t.call_rows)},
            {"no_call", Fraction(t.no_call_correct, t.no_call_rows)},
            {"invalid", Fraction(t.invalid, t.rows)},
            {"arguments", ArgumentsJson(t.args_expected, t.args_generated, t.args_matched)},
            {"latency_ms", Latency(all)},
            {"latency_warm_ms", Latency(warm)},
            {"wall_s", r.wall_s},
            {"rows_per_s", r.wall_s > 0 ? Json(static_cast<double>(t.rows) / r.wall_s) : Json(nullptr)},
            {"catalogs", {{"built", r.catalogs}, {"prefill_ms", r.catalog_ms}, {"restored", r.catalogs_restored}}},
            {"tokens", {{"prompt", t.prompt_tokens}, {"generated", t.generated_tokens}}},
            {"decoding",
             {{"passes", t.passes},
              {"passes_per_row", Rate(t.passes, t.rows)},
              {"drafted_tokens", t.drafted_tokens},
              {"accepted_tokens", t.accepted_tokens}}},
            {"functions", std::move(functions)}};
  if (!r.model.empty()) j["model"] = r.model;
  if (!r.data.empty()) j["data"] = r.data;
  if (!r.split.empty()) j["split"] = r.split;
  if (!r.adapter.empty()) j["adapter"] = r.adapter;
  return j;
}

Json EvalRowToJson(const EvalRowResult& row) {
  const CallOutcome& o = row.outcome;
  const RowScore& s = row.score;
  Json got = {{"calls", CallsJson(o.parsed.calls)},
              {"text", TextOrNull(o.parsed.text)},
              {"finish_reason", FinishReasonName(o.finish_reason)},
              {"error", o.parsed.ok() ? Json(nullptr) : Json(o.parsed.ErrorSummary())},
              {"raw", o.parsed.raw}};
  Json j = {{"line", row.line},
            {"split", row.row->split},
            {"expected", {{"calls", CallsJson(row.row->expected)}, {"text", TextOrNull(row.row->expected_text)}}},
            {"got", std::move(got)},
            {"exact", s.exact},
            {"names", s.expects_call ? Json(s.names) : Json(nullptr)},
            {"valid", s.valid},
            {"arguments", {{"expected", s.args_expected}, {"generated", s.args_generated}, {"matched", s.args_matched}}},
            {"latency_ms", row.latency_ms},
            {"catalog", o.timing.cache_source},
            {"prompt_tokens", o.timing.prompt_tokens},
            {"generated_tokens", o.timing.generated_tokens},
            {"passes", o.stats.model_calls},
            {"drafted_tokens", o.stats.drafted_tokens},
            {"accepted_tokens", o.stats.accepted_tokens}};
  return j;
}

std::string EvalReportText(const EvalReport& r) {
  const EvalTotals& t = r.totals;
  std::vector<double> all, warm;
  Latencies(r, &all, &warm);
  std::string s = Format("%zu rows (%zu expecting a call, %zu none)", t.rows, t.call_rows, t.no_call_rows);
  if (!r.split.empty()) s += ", split " + r.split;
  if (!r.adapter.empty()) s += ", adapter " + r.adapter;
  s += ", tool_choice " + r.options.tool_choice + (r.options.unconstrained ? ", unconstrained\n" : ", constrained\n");
  s += Format("exact match        %-7s (%zu/%zu rows; %s of the rows expecting a call)\n", Percent(t.exact, t.rows).c_str(),
              t.exact, t.rows, Percent(t.call_rows_exact, t.call_rows).c_str());
  s += Format("function name      %-7s (%zu/%zu rows expecting a call)\n", Percent(t.names, t.call_rows).c_str(), t.names, t.call_rows);
  s += Format("arguments          precision %s (%zu/%zu), recall %s (%zu/%zu)\n", Percent(t.args_matched, t.args_generated).c_str(),
              t.args_matched, t.args_generated, Percent(t.args_matched, t.args_expected).c_str(), t.args_matched, t.args_expected);
  s += Format("no-call accuracy   %-7s (%zu/%zu rows expecting no call)\n", Percent(t.no_call_correct, t.no_call_rows).c_str(),
              t.no_call_correct, t.no_call_rows);
  s += Format("invalid outputs    %-7s (%zu/%zu rows)\n", Percent(t.invalid, t.rows).c_str(), t.invalid, t.rows);
  s += Format("latency per row    p50 %.1f ms, p95 %.1f ms", Percentile(all, 50), Percentile(all, 95));
  if (!warm.empty()) s += Format(" (catalog restored: p50 %.1f ms, p95 %.1f ms)", Percentile(warm, 50), Percentile(warm, 95));
  s += Format("\ndecoding           %.2f passes over the model a row, its turn's prefill the first (%zu passes; drafts: %zu tokens guessed, %zu confirmed)",
              t.rows > 0 ? static_cast<double>(t.passes) / static_cast<double>(t.rows) : 0.0, t.passes, t.drafted_tokens,
              t.accepted_tokens);
  s += Format("\nthroughput         %.2f rows/s (%zu rows in %.2f s; %zu catalogs prefilled in %.2f s)\n",
              r.wall_s > 0 ? static_cast<double>(t.rows) / r.wall_s : 0.0, t.rows, r.wall_s, r.catalogs, r.catalog_ms / 1000);
  s += Format("\n%-28s %8s %9s %7s %7s %7s %7s %7s\n", "function", "expected", "generated", "name P", "name R", "exact", "arg P", "arg R");
  for (const auto& [name, f] : t.functions) {
    s += Format("%-28s %8zu %9zu %7s %7s %7s %7s %7s\n", name.c_str(), f.expected, f.generated, Percent(f.name_matched, f.generated).c_str(),
                Percent(f.name_matched, f.expected).c_str(), Percent(f.exact, f.expected).c_str(),
                Percent(f.args_matched, f.args_generated).c_str(), Percent(f.args_matched, f.args_expected).c_str());
  }
  return s;
}

}  // namespace fgemma
