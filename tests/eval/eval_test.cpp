// fgemma eval's library: rows in the Mobile Actions layout, scoring, and the runner.
//  - expectations written from the model's own greedy output score 100 %;
//  - rows perturbed in known ways (wrong name, one wrong argument, a call expected but not made,
//    a call made but none expected) score exactly the figures the perturbations imply;
//  - malformed rows give errors naming the line and the field;
//  - unconstrained decoding is plain greedy decoding, parsed afterwards.
#include <gtest/gtest.h>

#include <set>

#include "eval/eval_runner.h"
#include "runtime/loaded_model.h"
#include "test_support.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

const LoadedModel& Mini() {
  static const LoadedModel* loaded = [] {
    auto m = LoadModel(test::FixturePath("models/mini-bf16"));
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return new LoadedModel(std::move(m).value());
  }();
  return *loaded;
}

std::unique_ptr<FunctionCaller> NewCaller() {
  FunctionCallerOptions o;
  o.threads = 2;
  o.context = 2048;
  auto c = FunctionCaller::Create(Mini(), o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

// The sample's rows as JSON, in file order.
std::vector<OrderedJson> SampleRows() {
  const std::string text = ReadFileToString(test::FixturePath("eval/phone-actions.jsonl")).value();
  std::vector<OrderedJson> rows;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    if (end > pos) rows.push_back(OrderedJson::parse(text.substr(pos, end - pos)));
    pos = end + 1;
  }
  return rows;
}

std::string Lines(const std::vector<OrderedJson>& rows) {
  std::string text;
  for (const auto& r : rows) text += r.dump() + "\n";
  return text;
}

OrderedJson CallAnswer(const std::vector<std::pair<std::string, Json>>& calls) {
  OrderedJson tool_calls = OrderedJson::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    tool_calls.push_back({{"id", "call_" + std::to_string(i)},
                          {"type", "function"},
                          {"function", {{"name", calls[i].first}, {"arguments", calls[i].second.dump()}}}});
  }
  return {{"role", "assistant"}, {"tool_calls", tool_calls}};
}

OrderedJson TextAnswer(const std::string& text) { return {{"role", "assistant"}, {"content", text}}; }

std::vector<EvalRow> Parse(const std::vector<OrderedJson>& rows, const std::string& split = "all") {
  EvalSelection sel;
  sel.split = split;
  auto parsed = ParseEvalData(Lines(rows), "rows.jsonl", sel);
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  return parsed.ok() ? std::move(parsed).value() : std::vector<EvalRow>{};
}

// The sample's rows with their expected answer replaced by what `caller` generates for them
// under `tool_choice` (greedy, constrained): the expectations a perfect score needs.
struct SelfRows {
  std::vector<OrderedJson> rows;
  std::vector<ParsedOutput> outputs;
};
SelfRows MakeSelfRows(FunctionCaller& caller, const std::vector<OrderedJson>& source, const std::string& tool_choice) {
  SelfRows out;
  const std::vector<EvalRow> parsed = Parse(source);
  for (size_t i = 0; i < parsed.size(); ++i) {
    CallRequest req{parsed[i].prompt, ParseToolChoice(Json(tool_choice), parsed[i].prompt.tools).value()};
    auto outcome = caller.Call(req);
    EXPECT_TRUE(outcome.ok()) << outcome.status().ToString();
    EXPECT_TRUE(outcome->parsed.ok()) << outcome->parsed.ErrorSummary();
    OrderedJson row = source[i];
    std::vector<std::pair<std::string, Json>> calls;
    for (const auto& c : outcome->parsed.calls) calls.emplace_back(c.name, c.arguments);
    row["messages"].back() = calls.empty() ? TextAnswer(outcome->parsed.text) : CallAnswer(calls);
    out.rows.push_back(std::move(row));
    out.outputs.push_back(outcome->parsed);
  }
  return out;
}

EvalReport RunRows(FunctionCaller& caller, const std::vector<EvalRow>& rows, const std::string& tool_choice, bool unconstrained = false,
               size_t max_tokens = 0) {
  EvalOptions o;
  o.tool_choice = tool_choice;
  o.unconstrained = unconstrained;
  o.max_tokens = max_tokens;
  size_t last_done = 0;
  o.progress = [&](size_t done, size_t total) {
    EXPECT_EQ(done, last_done + 1);
    EXPECT_EQ(total, rows.size());
    last_done = done;
  };
  auto report = RunEval(caller, rows, o);
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(last_done, rows.size());
  return std::move(report).value();
}

// Eval rows of the sample (the first `count` of them) whose tool lists offer functions with
// arguments, so that calls carry argument pairs.
std::vector<OrderedJson> FirstEvalRows(size_t count) {
  std::vector<OrderedJson> out;
  for (auto& r : SampleRows()) {
    if (r["metadata"] == "eval" && out.size() < count) out.push_back(r);
  }
  return out;
}

size_t ArgCount(const ParsedOutput& o) {
  size_t n = 0;
  for (const auto& c : o.calls) n += c.arguments.size();
  return n;
}

TEST(EvalRun, SelfExpectationsScoreFullMarksAndPerturbationsExactFigures) {
  auto caller = NewCaller();
  SelfRows self = MakeSelfRows(*caller, FirstEvalRows(10), "required");
  // Row indices to perturb: single calls with arguments.
  std::vector<size_t> with_args;
  size_t expected_args = 0;
  for (size_t i = 0; i < self.outputs.size(); ++i) {
    expected_args += ArgCount(self.outputs[i]);
    if (self.outputs[i].calls.size() == 1 && !self.outputs[i].calls[0].arguments.empty()) with_args.push_back(i);
  }
  ASSERT_GE(with_args.size(), 3u) << "the perturbations need three single-call rows with arguments";
  ASSERT_GT(expected_args, 0u);

  // Unperturbed: every figure is perfect, whatever order the rows run in (grouped by tool list)
  // and whether their catalog state was built or restored.
  {
    auto rows = Parse(self.rows);
    EvalReport r = RunRows(*caller, rows, "required");
    const EvalTotals& t = r.totals;
    EXPECT_EQ(t.rows, rows.size());
    EXPECT_EQ(t.call_rows, rows.size());
    EXPECT_EQ(t.exact, rows.size());
    EXPECT_EQ(t.names, rows.size());
    EXPECT_EQ(t.invalid, 0u);
    EXPECT_EQ(t.args_expected, expected_args);
    EXPECT_EQ(t.args_generated, expected_args);
    EXPECT_EQ(t.args_matched, expected_args);
    for (const auto& [name, f] : t.functions) {
      EXPECT_EQ(f.expected, f.generated) << name;
      EXPECT_EQ(f.exact, f.expected) << name;
      EXPECT_EQ(f.args_matched, f.args_expected) << name;
    }
    const Json j = EvalReportToJson(r);
    EXPECT_EQ(j["exact_match"]["rate"], 1.0);
    EXPECT_EQ(j["function_name"]["rate"], 1.0);
    EXPECT_EQ(j["arguments"]["precision"], 1.0);
    EXPECT_EQ(j["arguments"]["recall"], 1.0);
    EXPECT_EQ(j["invalid"]["rate"], 0.0);
    EXPECT_TRUE(j["no_call"]["rate"].is_null());  // no row expects none
    for (size_t i = 0; i < r.rows.size(); ++i) EXPECT_EQ(r.rows[i].line, rows[i].line);  // file order
    EXPECT_GE(r.catalogs, 1u);
    EXPECT_LT(r.catalogs, rows.size());  // rows sharing a tool list shared its catalog state
  }

  // Perturbed: a wrong function name, one wrong argument value, and a call made where the
  // expectation says none.
  const size_t a = with_args[0], b = with_args[1], c = with_args[2];
  std::vector<OrderedJson> rows = self.rows;
  const ParsedCall& call_a = self.outputs[a].calls[0];
  std::string other;  // a declared function other than the one called
  for (const auto& tool : rows[a]["tools"]) {
    if (tool["function"]["name"] != call_a.name) other = tool["function"]["name"];
  }
  ASSERT_FALSE(other.empty());
  rows[a]["messages"].back() = CallAnswer({{other, call_a.arguments}});
  Json wrong = self.outputs[b].calls[0].arguments;
  wrong.begin().value() = "__not what the model said__";
  rows[b]["messages"].back() = CallAnswer({{self.outputs[b].calls[0].name, wrong}});
  rows[c]["messages"].back() = TextAnswer("No function fits.");
  const size_t ka = ArgCount(self.outputs[a]), kc = ArgCount(self.outputs[c]);

  auto parsed = Parse(rows);
  EvalReport r = RunRows(*caller, parsed, "required");
  const EvalTotals& t = r.totals;
  const size_t n = rows.size();
  EXPECT_EQ(t.rows, n);
  EXPECT_EQ(t.call_rows, n - 1);
  EXPECT_EQ(t.no_call_rows, 1u);
  EXPECT_EQ(t.exact, n - 3);
  EXPECT_EQ(t.call_rows_exact, n - 3);
  EXPECT_EQ(t.names, n - 2);  // the wrong argument keeps its name
  EXPECT_EQ(t.no_call_correct, 0u);
  EXPECT_EQ(t.invalid, 0u);
  EXPECT_EQ(t.args_generated, expected_args);
  EXPECT_EQ(t.args_expected, expected_args - kc);
  EXPECT_EQ(t.args_matched, expected_args - ka - 1 - kc);
  EXPECT_FALSE(r.rows[a].score.exact);
  EXPECT_FALSE(r.rows[a].score.names);
  EXPECT_FALSE(r.rows[b].score.exact);
  EXPECT_TRUE(r.rows[b].score.names);
  EXPECT_EQ(r.rows[b].score.args_matched, r.rows[b].score.args_expected - 1);
  EXPECT_FALSE(r.rows[c].score.expects_call);
  EXPECT_FALSE(r.rows[c].score.exact);
  // The per-function table: the wrong name is expected once more and never matched there.
  const FunctionTally& f_other = t.functions.at(other);
  size_t other_generated = 0, other_expected = 0;
  for (size_t i = 0; i < n; ++i) {
    for (const auto& call : self.outputs[i].calls) {
      other_generated += call.name == other;
      other_expected += call.name == other && i != c;
    }
  }
  EXPECT_EQ(f_other.generated, other_generated);
  EXPECT_EQ(f_other.expected, other_expected + 1);
  const Json j = EvalReportToJson(r);
  EXPECT_DOUBLE_EQ(j["exact_match"]["rate"].get<double>(), double(n - 3) / double(n));
  EXPECT_DOUBLE_EQ(j["function_name"]["rate"].get<double>(), double(n - 2) / double(n - 1));
  EXPECT_DOUBLE_EQ(j["no_call"]["rate"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(j["arguments"]["precision"].get<double>(), double(expected_args - ka - 1 - kc) / double(expected_args));
  EXPECT_DOUBLE_EQ(j["arguments"]["recall"].get<double>(), double(expected_args - ka - 1 - kc) / double(expected_args - kc));

  // --out rows say the same per row.
  const Json row_a = EvalRowToJson(r.rows[a]);
  EXPECT_EQ(row_a["exact"], false);
  EXPECT_EQ(row_a["names"], false);
  EXPECT_EQ(row_a["valid"], true);
  EXPECT_EQ(row_a["expected"]["calls"][0]["name"], other);
  EXPECT_EQ(row_a["got"]["calls"][0]["name"], call_a.name);
  EXPECT_EQ(row_a["line"], parsed[a].line);
  EXPECT_TRUE(EvalRowToJson(r.rows[c])["names"].is_null());
}

// tool_choice auto: the mini model (random weights) answers the sample's utterances with text, so
// a self expectation is "no call"; one row changed to expect a call scores as a missed call.
TEST(EvalRun, NoCallRowsAndAMissedCall) {
  auto caller = NewCaller();
  SelfRows self = MakeSelfRows(*caller, FirstEvalRows(2), "auto");
  for (const auto& o : self.outputs) ASSERT_TRUE(o.calls.empty()) << "the mini model was expected to answer with text";
  std::vector<OrderedJson> rows = self.rows;
  {
    const auto parsed = Parse(rows);
    EvalReport r = RunRows(*caller, parsed, "auto");
    EXPECT_EQ(r.totals.no_call_rows, 2u);
    EXPECT_EQ(r.totals.no_call_correct, 2u);
    EXPECT_EQ(r.totals.exact, 2u);
    EXPECT_TRUE(EvalReportToJson(r)["function_name"]["rate"].is_null());
  }
  const std::string declared = rows[1]["tools"][0]["function"]["name"];
  rows[1]["messages"].back() = CallAnswer({{declared, Json{{"query", "Lisbon"}}}});
  const auto parsed = Parse(rows);
  EvalReport r = RunRows(*caller, parsed, "auto");
  const EvalTotals& t = r.totals;
  EXPECT_EQ(t.call_rows, 1u);
  EXPECT_EQ(t.no_call_rows, 1u);
  EXPECT_EQ(t.exact, 1u);
  EXPECT_EQ(t.call_rows_exact, 0u);
  EXPECT_EQ(t.names, 0u);
  EXPECT_EQ(t.no_call_correct, 1u);
  EXPECT_EQ(t.args_expected, 1u);
  EXPECT_EQ(t.args_generated, 0u);
  EXPECT_EQ(t.args_matched, 0u);
  EXPECT_EQ(t.functions.at(declared).expected, 1u);
  EXPECT_EQ(t.functions.at(declared).generated, 0u);
  const Json j = EvalReportToJson(r);
  EXPECT_TRUE(j["arguments"]["precision"].is_null());  // nothing generated: no precision
  EXPECT_DOUBLE_EQ(j["arguments"]["recall"].get<double>(), 0.0);
}

// --unconstrained decodes greedily over the whole vocabulary (the same tokens as Session::Generate
// from the same prompt) and parses the text afterwards; what does not parse or validate is invalid.
TEST(EvalRun, UnconstrainedIsPlainGreedyDecodingParsedAfterwards) {
  auto caller = NewCaller();
  auto rows = Parse(FirstEvalRows(3));
  CallRequest req{rows[0].prompt, ParseToolChoice(Json("auto"), rows[0].prompt.tools).value()};
  req.unconstrained = true;
  req.limits.max_tokens = 12;
  auto outcome = caller->Call(req);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  ASSERT_FALSE(outcome->output_tokens.empty());
  EXPECT_LE(outcome->output_tokens.size(), 12u);

  SessionOptions so;
  so.threads = 2;
  so.context = 2048;
  auto session = Session::Create(Mini().model, so).value();
  std::vector<int32_t> greedy;
  ASSERT_TRUE(session->Generate(outcome->prompt_tokens, outcome->output_tokens.size(), false, [&](int32_t id) {
                       greedy.push_back(id);
                       return true;
                     }).ok());
  EXPECT_EQ(greedy, outcome->output_tokens);
  const std::string text = Mini().tokenizer.Decode(outcome->output_tokens).value();
  const ParsedOutput reparsed = ParseModelOutput(text, rows[0].prompt.tools);
  EXPECT_EQ(reparsed.text, outcome->parsed.text);
  EXPECT_EQ(reparsed.calls.size(), outcome->parsed.calls.size());
  if (outcome->finish_reason != FinishReason::kLength) EXPECT_EQ(reparsed.ok(), outcome->parsed.ok());
  if (outcome->finish_reason == FinishReason::kLength) EXPECT_FALSE(outcome->parsed.ok());

  // A constrained request after it, on the same caller, is the one a fresh caller answers.
  CallRequest constrained{rows[0].prompt, ParseToolChoice(Json("required"), rows[0].prompt.tools).value()};
  auto after = caller->Call(constrained);
  auto fresh = NewCaller()->Call(constrained);
  ASSERT_TRUE(after.ok() && fresh.ok());
  EXPECT_EQ(after->output_tokens, fresh->output_tokens);
  EXPECT_TRUE(after->parsed.ok()) << after->parsed.ErrorSummary();

  EvalReport r = RunRows(*caller, rows, "auto", /*unconstrained=*/true, /*max_tokens=*/12);
  size_t invalid = 0;
  for (const auto& row : r.rows) {
    EXPECT_EQ(row.score.valid, row.outcome.parsed.ok());
    invalid += row.outcome.parsed.ok() ? 0 : 1;
    if (row.outcome.finish_reason == FinishReason::kLength) EXPECT_FALSE(row.score.valid);
  }
  EXPECT_EQ(r.totals.invalid, invalid);
  EXPECT_EQ(EvalReportToJson(r)["constrained"], false);
}

// ---- scoring alone ----

// Parsed without declarations: values keep their syntax's types.
ParsedOutput Output(const std::string& text) { return ParseModelOutput(text); }

TEST(EvalScore, CallsCompareAsJsonValuesInAnyOrder) {
  const std::vector<ExpectedCall> expected = {{"set_volume", Json{{"level", 5}, {"mute", false}}},
                                              {"show_map", Json{{"query", "Porto"}}}};
  const ParsedOutput got = Output(
      "<start_function_call>call:show_map{query:<escape>Porto<escape>}<end_function_call>"
      "<start_function_call>call:set_volume{mute:false,level:5.0}<end_function_call><end_of_turn>");
  ASSERT_TRUE(got.ok()) << got.ErrorSummary();
  std::map<std::string, FunctionTally> functions;
  const RowScore s = ScoreRow(expected, got, &functions);
  EXPECT_TRUE(s.exact);
  EXPECT_TRUE(s.names);
  EXPECT_EQ(s.args_matched, 3u);
  EXPECT_EQ(functions.at("set_volume").exact, 1u);

  const ParsedOutput one = Output("<start_function_call>call:show_map{query:<escape>Porto<escape>}<end_function_call><end_of_turn>");
  const RowScore partial = ScoreRow(expected, one);
  EXPECT_FALSE(partial.exact);
  EXPECT_FALSE(partial.names);
  EXPECT_EQ(partial.args_expected, 3u);
  EXPECT_EQ(partial.args_generated, 1u);
  EXPECT_EQ(partial.args_matched, 1u);

  // A pair belongs to its function: the same key and value under another name does not match.
  const ParsedOutput other = Output("<start_function_call>call:show_place{query:<escape>Porto<escape>}<end_function_call><end_of_turn>");
  EXPECT_EQ(ScoreRow({{"show_map", Json{{"query", "Porto"}}}}, other).args_matched, 0u);
}

TEST(EvalScore, InvalidOutputNeverMatches) {
  const std::vector<ExpectedCall> expected = {{"show_map", Json{{"query", "Porto"}}}};
  // The call completes, then the output breaks off inside a second one.
  const ParsedOutput got = Output(
      "<start_function_call>call:show_map{query:<escape>Porto<escape>}<end_function_call><start_function_call>call:sh");
  ASSERT_FALSE(got.ok());
  ASSERT_EQ(got.calls.size(), 1u);
  const RowScore s = ScoreRow(expected, got);
  EXPECT_FALSE(s.valid);
  EXPECT_FALSE(s.exact);
  EXPECT_TRUE(s.names);  // the completed call still counts for names and arguments
  EXPECT_EQ(s.args_matched, 1u);
  EvalTotals t;
  AddScore(s, &t);
  EXPECT_EQ(t.invalid, 1u);
  EXPECT_EQ(t.exact, 0u);
  // No call expected: text is a correct answer, whatever it says.
  EXPECT_TRUE(ScoreRow({}, Output("Sorry, I cannot do that.<end_of_turn>")).exact);
}

TEST(EvalScore, NearestRankPercentiles) {
  EXPECT_EQ(Percentile({}, 50), 0);
  EXPECT_EQ(Percentile({7}, 95), 7);
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  EXPECT_EQ(Percentile(v, 50), 50);
  EXPECT_EQ(Percentile(v, 95), 95);
  EXPECT_EQ(Percentile({1, 2, 3, 4}, 50), 2);
}

// ---- the data file ----

TEST(EvalData, ReadsTheSampleAndSelectsSplits) {
  const std::string path = test::FixturePath("eval/phone-actions.jsonl");
  EvalSelection sel;
  auto eval = ReadEvalData(path, sel);
  ASSERT_TRUE(eval.ok()) << eval.status().ToString();
  sel.split = "train";
  auto train = ReadEvalData(path, sel);
  ASSERT_TRUE(train.ok());
  sel.split = "all";
  auto all = ReadEvalData(path, sel);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 300u);
  EXPECT_EQ(eval->size() + train->size(), 300u);
  for (const auto& r : *eval) {
    EXPECT_EQ(r.split, "eval");
    ASSERT_FALSE(r.prompt.messages.empty());
    EXPECT_NE(r.prompt.messages.back().role, Role::kAssistant);  // the answer is not in the prompt
    EXPECT_EQ(r.prompt.messages.size(), r.prompt.messages_json.size());
  }
  sel.limit = 7;
  EXPECT_EQ(ReadEvalData(path, sel)->size(), 7u);
  // Arguments arrive as JSON text and become values; rows without calls keep their text.
  const EvalRow& first = all->front();
  ASSERT_EQ(first.expected.size(), 1u);
  EXPECT_EQ(first.expected[0].name, "create_contact");
  EXPECT_EQ(first.expected[0].arguments["first_name"], "Jun");
  EXPECT_EQ(first.line, 1u);
  // One key per tool list, the same for lists that differ only in key order.
  std::set<std::string> keys;
  for (const auto& r : *all) keys.insert(r.tools_key);
  EXPECT_LT(keys.size(), all->size());
}

TEST(EvalData, ToolListsKeyByValue) {
  const char* a = R"({"metadata":"eval","tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","properties":{}}}}],"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y"}]})";
  const char* b = R"({"metadata":"eval","tools":[{"function":{"parameters":{"properties":{},"type":"object"},"description":"d","name":"f"},"type":"function"}],"messages":[{"role":"user","content":"z"},{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}]})";
  auto ra = ParseEvalRow(a, 1, "a");
  auto rb = ParseEvalRow(b, 1, "b");
  ASSERT_TRUE(ra.ok()) << ra.status().ToString();
  ASSERT_TRUE(rb.ok()) << rb.status().ToString();
  EXPECT_EQ(ra->tools_key, rb->tools_key);
  EXPECT_TRUE(ra->expected.empty());
  EXPECT_EQ(ra->expected_text, "y");
  ASSERT_EQ(rb->expected.size(), 1u);
  EXPECT_EQ(rb->expected[0].arguments, Json::object());
}

TEST(EvalData, MalformedRowsNameTheLineAndField) {
  const std::string tools = R"([{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}])";
  const std::string user = R"({"role":"user","content":"hi"})";
  auto row = [&](const std::string& meta, const std::string& tl, const std::string& msgs) {
    std::string s = "{";
    if (!meta.empty()) s += "\"metadata\":" + meta + ",";
    if (!tl.empty()) s += "\"tools\":" + tl + ",";
    if (!msgs.empty()) s += "\"messages\":" + msgs + ",";
    if (s.back() == ',') s.pop_back();
    return s + "}";
  };
  auto call = [&](const std::string& name, const std::string& args_json) {
    return "[" + user + R"(,{"role":"assistant","tool_calls":[{"type":"function","function":{"name":")" + name +
           R"(","arguments":)" + args_json + "}}]}]";
  };
  const std::string good = row("\"eval\"", tools, call("f", R"("{\"a\": \"x\"}")"));
  ASSERT_TRUE(ParseEvalRow(good, 1, "d:1").ok()) << ParseEvalRow(good, 1, "d:1").status().ToString();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{not json", "malformed JSON"},
      {"[1,2]", "expected a JSON object, got array"},
      {row("", tools, call("f", "\"{}\"")), "metadata: missing"},
      {row("\"test\"", tools, call("f", "\"{}\"")), "metadata: expected \"train\" or \"eval\", got \"test\""},
      {row("3", tools, call("f", "\"{}\"")), "metadata: expected \"train\" or \"eval\", got 3"},
      {row("\"eval\"", "", call("f", "\"{}\"")), "tools: missing"},
      {row("\"eval\"", "{}", call("f", "\"{}\"")), "tools: must be an array of tools, got object"},
      {row("\"eval\"", R"([{"type":"function","function":{"name":7}}])", call("f", "\"{}\"")), "tools[0].function.name"},
      {row("\"eval\"", tools, ""), "messages: missing"},
      {row("\"eval\"", tools, "\"hi\""), "messages: must be an array, got string"},
      {row("\"eval\"", tools, "[" + user + "]"), "messages: needs the prompt and the expected assistant turn, got 1"},
      {row("\"eval\"", tools, "[" + user + "," + user + "]"), "messages[1]: the last message must be the expected assistant turn"},
      {row("\"eval\"", tools, R"([{"role":"user","content":5},{"role":"assistant","content":"x"}])"), "messages[0].content"},
      {row("\"eval\"", tools, call("f", R"("{\"a\": ")")), "messages[1].tool_calls[0].function.arguments"},
      {row("\"eval\"", tools, call("f", R"("[1]")")), "messages[1].tool_calls[0].function.arguments: must encode a JSON object"},
      {row("\"eval\"", tools, call("g", "\"{}\"")), "messages[1].tool_calls[0].function.name: 'g' is not declared in the row's tools"},
  };
  for (const auto& [line, want] : cases) {
    // The bad row is line 3 of a file whose other lines are fine (and one is blank).
    const std::string text = good + "\n\n" + line + "\n" + good + "\n";
    auto parsed = ParseEvalData(text, "data.jsonl", EvalSelection{});
    ASSERT_FALSE(parsed.ok()) << line;
    const std::string msg = parsed.status().message();
    EXPECT_NE(msg.find("data.jsonl:3"), std::string::npos) << msg;
    EXPECT_NE(msg.find(want), std::string::npos) << "want '" << want << "' in: " << msg;
  }
}

TEST(EvalData, SelectionErrors) {
  const std::string line = Lines({FirstEvalRows(1)[0]});
  EvalSelection sel;
  sel.split = "test";
  auto bad = ParseEvalData(line, "d.jsonl", sel);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown split 'test'"), std::string::npos) << bad.status().message();
  sel.split = "train";
  auto none = ParseEvalData(line, "d.jsonl", sel);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("d.jsonl: none of its 1 rows has metadata \"train\""), std::string::npos)
      << none.status().message();
  auto empty = ParseEvalData("\n  \n", "d.jsonl", EvalSelection{});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("d.jsonl: no rows"), std::string::npos);
  auto missing = ReadEvalData(test::TempDir() + "/absent.jsonl", EvalSelection{});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("absent.jsonl"), std::string::npos);
  // CRLF line ends are accepted.
  std::string crlf = line;
  crlf.insert(crlf.size() - 1, "\r");
  EXPECT_TRUE(ParseEvalData(crlf, "d.jsonl", EvalSelection{}).ok());
}

// A row the engine refuses stops the run with an error naming its line.
TEST(EvalRun, RefusedRowNamesItsLine) {
  FunctionCallerOptions o;
  o.threads = 2;
  o.context = 96;  // too short for the sample's prompts
  auto caller = FunctionCaller::Create(Mini(), o).value();
  auto rows = Parse(FirstEvalRows(2));
  auto report = RunEval(*caller, rows, EvalOptions{});
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("row at line " + std::to_string(rows[0].line)), std::string::npos)
      << report.status().message();
}

}  // namespace
}  // namespace fgemma
