// Exact speculative drafts (issue 14): the lookup, the KV rollback they need, and that decoding
// with drafts writes the same tokens as without, in fewer passes.
#include <cstring>
#include <optional>

#include "constrained_support.h"
#include "runtime/draft_lookup.h"
#include "runtime/follow_text.h"
#include "runtime/function_caller.h"
#include "util/json.h"

namespace fgemma {
namespace {

TEST(DraftLookup, AnchoredHistoryThenLongestSuffixThenWords) {
  const std::vector<std::string> sources = {"<call>set_lights{room:kitchen}", "turn on the kitchen lights"};
  std::vector<DraftCandidate> c;
  // Nothing written: only an earlier output (anchored) proposes, from its start.
  LookupDrafts("", sources, 1, 100, false, 8, &c);
  EXPECT_EQ(c, (std::vector<DraftCandidate>{{"<call>set_lights{room:kitchen}", 16}}));
  LookupDrafts("", sources, 0, 100, false, 8, &c);
  EXPECT_TRUE(c.empty());
  // The history begins with what is written: its rest first (cut to max_bytes), then suffix matches.
  LookupDrafts("<call>set_", sources, 1, 6, false, 8, &c);
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c[0].text, "lights");
  // The longest suffix first: "the kit" in the utterance before "kit" in the history.
  LookupDrafts("xx the kit", sources, 1, 100, false, 8, &c);
  EXPECT_EQ(c, (std::vector<DraftCandidate>{{"chen lights", 4}, {"chen}", 2}}));
  LookupDrafts("zzz", sources, 1, 100, false, 8, &c);
  EXPECT_TRUE(c.empty());
  // Words of the utterance, in order, after the matches; no duplicates; at most max_candidates.
  LookupDrafts("zzz", sources, 1, 100, true, 3, &c);
  EXPECT_EQ(c, (std::vector<DraftCandidate>{{"turn on the kitchen lights", 3}, {"on the kitchen lights", 3}, {"the kitchen lights", 3}}));
}

// At a value the utterance's words come first (worth more: the generator keeps a word only where it
// is a whole value); each candidate says where it came from.
TEST(DraftLookup, WordsFirstAtAValue) {
  const std::vector<std::string> sources = {"x{room:bedroom}", "the kitchen lights"};
  std::vector<DraftCandidate> c;
  LookupDrafts("y{room:", sources, 1, 100, true, 8, &c, /*words_first=*/true);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0], (DraftCandidate{"the kitchen lights", 6}));
  EXPECT_EQ(c[0].source, DraftSource::kWord);
  EXPECT_EQ(c[2].text, "lights");
  EXPECT_EQ(c[3], (DraftCandidate{"bedroom}", 4}));
  EXPECT_EQ(c[3].source, DraftSource::kHistoryMatch);
  LookupDrafts("y{room:", sources, 1, 100, true, 8, &c);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0].text, "bedroom}");
  EXPECT_EQ(c[1].source, DraftSource::kWord);
  LookupDrafts("kit", sources, 1, 100, false, 8, &c);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].source, DraftSource::kTextMatch);
}

// Rewind after a speculative batch leaves the state of evaluating only the kept tokens: the next
// positions' logits are the same bits, through the sliding layers' ring (16 rows on the mini
// model, wrapped many times by the prompt).
TEST(DraftRollback, RewindEqualsNeverEvaluating) {
  auto& w = test::ConstrainedWorld::Get();
  std::vector<int32_t> prompt(40), kept(3), rejected(9), after(6);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(1000 + 37 * i);
  for (size_t i = 0; i < kept.size(); ++i) kept[i] = static_cast<int32_t>(5000 + 11 * i);
  for (size_t i = 0; i < rejected.size(); ++i) rejected[i] = static_cast<int32_t>(9000 + 13 * i);
  for (size_t i = 0; i < after.size(); ++i) after[i] = static_cast<int32_t>(20000 + 17 * i);
  auto logits_after = [&](Session& s) { return test::LogitsOneAtATime(s, after); };
  auto reference = w.NewSession();
  ASSERT_TRUE(reference->Evaluate(prompt).ok());
  ASSERT_TRUE(reference->Evaluate(kept).ok());
  const std::vector<float> want = logits_after(*reference);

  auto spec = w.NewSession();
  ASSERT_TRUE(spec->Evaluate(prompt).ok());
  std::vector<int32_t> batch = kept;
  batch.insert(batch.end(), rejected.begin(), rejected.end());
  ASSERT_LE(batch.size(), spec->max_speculative_batch());
  ASSERT_TRUE(spec->EvaluateSpeculative(batch, {}, rejected.size() + 1).ok());
  ASSERT_TRUE(spec->Rewind(rejected.size()).ok());
  EXPECT_EQ(spec->position(), prompt.size() + kept.size());
  EXPECT_FALSE(spec->Rewind(2).ok());  // only one more position was declared undoable
  const std::vector<float> got = logits_after(*spec);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
}

// A batch of positions gives each one the head bits it gets one token at a time (what makes
// verification exact: matmuls, attention over the ring and the chunk, norms, RoPE, and the
// whole-vocabulary heads of a batch computed in one pass over the embedding), in every weight type.
TEST(DraftRollback, BatchHeadsEqualOneTokenAtATime) {
  for (const char* path : {"models/mini-bf16", "models/mini-q8_0.gguf", "models/mini-q4_0.gguf"}) {
    auto model = std::shared_ptr<const Model>(Model::Load(test::FixturePath(path)).value());
    SessionOptions so;
    so.context = 512;
    so.threads = 2;
    std::vector<int32_t> prompt(30), tail(12);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(700 + 41 * i);
    for (size_t i = 0; i < tail.size(); ++i) tail[i] = static_cast<int32_t>(3000 + 29 * i);
    const size_t vocab = static_cast<size_t>(model->config().vocab_size);
    std::vector<float> single(tail.size() * vocab), batched(tail.size() * vocab);
    std::vector<int32_t> single_ids(tail.size()), batched_ids(tail.size());
    auto a = Session::Create(model, so).value();
    ASSERT_TRUE(a->Evaluate(prompt).ok());
    for (size_t i = 0; i < tail.size(); ++i) {
      HeadRequest h;
      if (i % 2 == 0) h.logits = single.data() + i * vocab;
      ASSERT_TRUE(a->Evaluate(std::span<const int32_t>(&tail[i], 1), std::span<HeadRequest>(&h, 1)).ok());
      single_ids[i] = h.argmax;
    }
    auto b = Session::Create(model, so).value();
    ASSERT_TRUE(b->Evaluate(prompt).ok());
    std::vector<HeadRequest> heads(tail.size());
    for (size_t i = 0; i < tail.size(); ++i) {
      heads[i].index = i;
      if (i % 2 == 0) heads[i].logits = batched.data() + i * vocab;
    }
    ASSERT_TRUE(b->EvaluateSpeculative(tail, heads, tail.size() - 1).ok());
    for (size_t i = 0; i < tail.size(); ++i) batched_ids[i] = heads[i].argmax;
    EXPECT_EQ(batched_ids, single_ids) << path;
    EXPECT_EQ(std::memcmp(single.data(), batched.data(), single.size() * sizeof(float)), 0) << path;
  }
}

TEST(Drafts, ChangeNoTokenOverRandomCatalogs) {
  test::DraftComparison totals;
  test::CompareDrafts(24, 14, &totals);
  EXPECT_GT(totals.drafted, 0u);
  EXPECT_GT(totals.accepted, 0u);
}

// The smart-home catalog through FunctionCaller: realistic calls (written with FollowText, as
// `fgemma call --follow` does) equal token for token with and without drafts, and a call that
// copies its values from the utterance takes fewer passes than tokens.
TEST(Drafts, SmartHomeCallsEqualAndTakeFewerPasses) {
  auto& w = test::ConstrainedWorld::Get();
  OrderedJson tools = ParseOrderedJson(ReadFileToString(test::FixturePath("chat/smart-home-tools.json")).value(), "tools").value();
  std::vector<std::pair<std::string, std::string>> calls;
  {
    const std::string lines = ReadFileToString(std::string(FGEMMA_SOURCE_DIR) + "/examples/smart-home/calls.jsonl").value();
    size_t at = 0;
    while (at < lines.size()) {
      const size_t end = lines.find('\n', at);
      const Json j = Json::parse(lines.substr(at, end - at));
      calls.emplace_back(j["utterance"], j["output"]);
      at = end == std::string::npos ? lines.size() : end + 1;
    }
  }
  ASSERT_GE(calls.size(), 20u);
  auto make = [&](bool draft) {
    FunctionCallerOptions o;
    o.threads = 2;
    o.context = 2048;
    o.decoding.draft = draft;
    auto loaded = LoadedModel::FromParts(w.model, w.tokenizer).value();
    return FunctionCaller::Create(loaded, o).value();
  };
  auto with = make(true), without = make(false);
  size_t passes = 0, plain_passes = 0, tokens = 0;
  for (const auto& [utterance, output] : calls) {
    FollowText f1(with->constraint_vocab(), output), f2(without->constraint_vocab(), output);
    with->set_choice_hook(&f1);
    without->set_choice_hook(&f2);
    CallRequest req{test::MakeRequest(tools, utterance), ToolChoice{ToolChoiceMode::kRequired, ""}, {}, {}};
    auto ra = with->Call(req), rb = without->Call(req);
    ASSERT_TRUE(ra.ok()) << utterance << ": " << ra.status().ToString();
    ASSERT_TRUE(rb.ok()) << utterance << ": " << rb.status().ToString();
    const CallOutcome &a = ra.value(), &b = rb.value();
    EXPECT_EQ(a.output_tokens, b.output_tokens) << utterance;
    std::string text;
    for (int32_t id : a.output_tokens) text += with->constraint_vocab().TokenText(id);
    EXPECT_TRUE(text.starts_with(output)) << text;
    passes += a.stats.model_calls;
    plain_passes += b.stats.model_calls;
    tokens += a.output_tokens.size();
  }
  std::printf("%zu calls: %zu tokens, %zu passes with drafts, %zu without\n", calls.size(), tokens, passes, plain_passes);
  EXPECT_LT(passes, plain_passes);

  // Built to copy: the value is the utterance's text, so after its first token the rest is drafted.
  OrderedJson note = OrderedJson::parse(R"([{"type":"function","function":{"name":"note","description":"d",
      "parameters":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}}])");
  const std::string utterance = "remember to buy oat milk, two lemons and a loaf of rye bread on the way home";
  const std::string output = "<start_function_call>call:note{text:<escape>" + utterance + "<escape>}<end_function_call><start_function_response>";
  FollowText follow(with->constraint_vocab(), output);
  with->set_choice_hook(&follow);
  auto rc = with->Call({test::MakeRequest(note, utterance), ToolChoice{ToolChoiceMode::kRequired, ""}, {}, {}});
  ASSERT_TRUE(rc.ok()) << rc.status().ToString();
  const CallOutcome& c = rc.value();
  std::printf("copying call: %zu tokens in %zu passes, %zu drafted, %zu accepted\n", c.output_tokens.size(),
              c.stats.model_calls, c.stats.drafted_tokens, c.stats.accepted_tokens);
  EXPECT_LT(c.stats.model_calls * 2, c.output_tokens.size());
  EXPECT_GT(c.stats.accepted_tokens, 10u);
}

// The caller's draft history keeps the last output of each kind (a function's calls, text answers)
// beyond its last few outputs, and across catalogs: a text answer written before nine other calls
// and a catalog switch drafts the same answer again. With the history cleared at the switch, or
// holding only the last 8 outputs, the answer costs a pass a token.
TEST(Drafts, HistoryKeepsEachKindAcrossCatalogs) {
  auto& w = test::ConstrainedWorld::Get();
  OrderedJson tools = ParseOrderedJson(ReadFileToString(test::FixturePath("chat/smart-home-tools.json")).value(), "tools").value();
  OrderedJson fewer = tools;
  fewer.erase(fewer.size() - 1);  // another catalog: the app's screen without one tool
  FunctionCallerOptions o;
  o.threads = 2;
  o.context = 2048;
  auto loaded = LoadedModel::FromParts(w.model, w.tokenizer).value();
  auto caller = FunctionCaller::Create(loaded, o).value();
  const std::string answer = "I can turn lights on and off, set the thermostat, lock the doors and play music.<end_of_turn>";
  auto write = [&](const OrderedJson& catalog, const std::string& utterance, const std::string& output) {
    FollowText follow(caller->constraint_vocab(), output);
    caller->set_choice_hook(&follow);
    auto r = caller->Call({test::MakeRequest(catalog, utterance), ToolChoice{ToolChoiceMode::kAuto, ""}, {}, {}});
    caller->set_choice_hook(nullptr);
    EXPECT_TRUE(r.ok()) << utterance << ": " << r.status().ToString();
    return r.ok() ? r.value() : CallOutcome{};
  };
  const CallOutcome first = write(tools, "what can you do?", answer);
  const std::string lines = ReadFileToString(std::string(FGEMMA_SOURCE_DIR) + "/examples/smart-home/calls.jsonl").value();
  size_t at = 0;
  for (int i = 0; i < 9; ++i) {
    const size_t end = lines.find('\n', at);
    const Json j = Json::parse(lines.substr(at, end - at));
    write(tools, j["utterance"], j["output"]);
    at = end + 1;
  }
  const CallOutcome again = write(fewer, "what else can you do?", answer);
  std::printf("answer of %zu tokens: %zu passes first, %zu again (%zu accepted)\n", again.output_tokens.size(),
              first.stats.model_calls, again.stats.model_calls, again.stats.accepted_tokens);
  EXPECT_EQ(again.output_tokens, first.output_tokens);
  EXPECT_GE(first.stats.model_calls, 10u);
  EXPECT_LE(again.stats.model_calls, 4u);
}

// One scripted call through CallGenerator: `output` is written (FollowText), drafted from `history`
// (an earlier output) and the utterance; accepted guesses are counted per source.
class ScriptedCall {
 public:
  ScriptedCall(const OrderedJson& tools, const std::string& utterance, std::string output, std::string history)
      : world_(test::ConstrainedWorld::Get()),
        request_(test::MakeRequest(tools, utterance)),
        output_(std::move(output)),
        sources_{std::move(history), utterance},
        session_(world_.NewSession()) {
    auto grammar = CallGrammar::Compile(request_.tools, ToolChoice{ToolChoiceMode::kAuto, ""}, GrammarLimits{});
    EXPECT_TRUE(grammar.ok()) << grammar.status().ToString();
    if (grammar.ok()) grammar_ = std::move(grammar).value();
    ids_ = world_.tokenizer.Encode(RenderPrompt(request_).value());
  }
  // The output's tokens, with or without drafts (lookups 0: the default number per pass).
  std::vector<int32_t> Run(bool draft, ConstrainedStats* st, size_t lookups = 0, uint32_t guessers = kGuessAll) {
    ConstrainedOptions opt;
    opt.draft = draft;
    if (lookups > 0) opt.draft_lookups = lookups;
    opt.draft_guessers = guessers;
    opt.draft_sources = sources_;
    opt.draft_anchored = 1;
    opt.on_draft_pass = [&](const DraftPassTrace& t) {
      for (size_t k = 0; k < t.accepted; ++k) ++accepted[static_cast<size_t>(t.sources[k])];
    };
    FollowText follow(world_.vocab, output_);
    opt.choice_hook = &follow;
    CallGenerator cg(world_.vocab, *grammar_, world_.model->config().vocab_size);
    std::vector<int32_t> out;
    session_->Reset();
    EXPECT_TRUE(cg.Generate(*session_, ids_, opt, &out, st).ok());
    return out;
  }
  std::string Text(const std::vector<int32_t>& ids) const {
    std::string text;
    for (int32_t id : ids) text += world_.vocab.TokenText(id);
    return text;
  }
  size_t accepted[kDraftSourceCount] = {};

 private:
  test::ConstrainedWorld& world_;
  ChatRequest request_;
  std::string output_;
  std::vector<std::string> sources_;
  std::optional<CallGrammar> grammar_;
  std::vector<int32_t> ids_;
  std::unique_ptr<Session> session_;
};

// One guesser rule measured: the call decoded without drafts, with drafts but without `rule`, and
// with every rule; the three give the same tokens (the expected output). The sources accepted are
// the last run's (call.accepted).
struct RuleRuns {
  ConstrainedStats plain, without, with;
  static size_t Refused(const ConstrainedStats& st) { return st.drafted_tokens - st.accepted_tokens; }
  void Print(const char* rule) const {
    std::printf("%s rule: %zu passes without drafts, %zu without the rule, %zu with it (refused guesses %zu -> %zu)\n",
                rule, plain.model_calls, without.model_calls, with.model_calls, Refused(without), Refused(with));
  }
};
// `base`: the rules on in both drafted runs (some rules refuse the same guesses as others on a
// simple call, so a rule's own test may turn those off).
RuleRuns RunWithAndWithout(ScriptedCall& call, uint32_t rule, const std::string& output, const std::string& label,
                           uint32_t base = kGuessAll) {
  RuleRuns r;
  const std::vector<int32_t> want = call.Run(false, &r.plain);
  EXPECT_EQ(call.Text(want), output) << label;
  EXPECT_EQ(call.Run(true, &r.without, 0, base & ~rule), want) << label;
  std::fill(std::begin(call.accepted), std::end(call.accepted), 0);
  EXPECT_EQ(call.Run(true, &r.with, 0, base | rule), want) << label;
  return r;
}

// "turn on the bedroom lights" over lights and music, after an earlier play_music call: the
// utterance names the tool the history does not call.
constexpr std::string_view kLightsOutput =
    "<start_function_call>call:set_lights{on:true,room:<escape>bedroom<escape>}<end_function_call><start_function_response>";
ScriptedCall BedroomLightsAfterMusic() {
  const OrderedJson tools = OrderedJson::parse(R"([
    {"type":"function","function":{"name":"set_lights","description":"d","parameters":{"type":"object",
      "properties":{"room":{"type":"string","enum":["kitchen","bedroom"]},"on":{"type":"boolean"}},"required":["room","on"]}}},
    {"type":"function","function":{"name":"play_music","description":"d","parameters":{"type":"object",
      "properties":{"query":{"type":"string"}},"required":["query"]}}}])");
  return ScriptedCall(tools, "turn on the bedroom lights", std::string(kLightsOutput),
                      "<start_function_call>call:play_music{query:<escape>jazz<escape>}<end_function_call><start_function_response>");
}

// The guesser's other sources: the tool the utterance names (the history holds another tool's
// call), a value and a key copied as whole words, and the call's closing tokens looked up after
// them in the same pass. Tokens equal decoding without drafts, with one lookup per pass or more.
TEST(Drafts, NamedToolAndWholeWordValuesAreGuessed) {
  const std::string output(kLightsOutput);
  ScriptedCall call = BedroomLightsAfterMusic();
  ConstrainedStats plain, one, chained;
  const std::vector<int32_t> want = call.Run(false, &plain, 1);
  EXPECT_EQ(call.Text(want), output);
  EXPECT_EQ(call.Run(true, &one, 1), want);
  std::fill(std::begin(call.accepted), std::end(call.accepted), 0);
  EXPECT_EQ(call.Run(true, &chained, 4), want);
  EXPECT_GT(call.accepted[static_cast<size_t>(DraftSource::kName)], 0u);
  EXPECT_GT(call.accepted[static_cast<size_t>(DraftSource::kWord)], 0u);
  EXPECT_LE(chained.model_calls, one.model_calls);
  EXPECT_LT(chained.model_calls, plain.model_calls);
  std::printf("named tool: %zu passes without drafts, %zu with one lookup per pass, %zu chained\n", plain.model_calls,
              one.model_calls, chained.model_calls);
}

// The named-tool and chain rules, each turned off alone: the tool the utterance names is guessed
// before the earlier call's tool (a refused "play_music" otherwise), and a guess goes on from a new
// lookup where its source ends (the name, then the utterance's words, then the close, in one pass).
// Tokens equal decoding without drafts either way.
TEST(Drafts, NamedToolAndChainRulesEachSavePasses) {
  for (const auto& [rule, name] : {std::pair{kGuessNamedTool, "named tool"}, std::pair{kGuessChain, "chain"}}) {
    ScriptedCall call = BedroomLightsAfterMusic();
    const RuleRuns r = RunWithAndWithout(call, rule, std::string(kLightsOutput), name);
    EXPECT_LE(r.with.model_calls, r.without.model_calls) << name;
    EXPECT_TRUE(r.with.model_calls < r.without.model_calls || RuleRuns::Refused(r.with) < RuleRuns::Refused(r.without))
        << name;
    r.Print(name);
  }
}

// The close rule: after the last value the utterance says (a number ending it, a copied time
// string with no key sorting after it), the call's '}' and the tokens after it are guessed in the
// same pass instead of an earlier call's ','. The utterance's own text guesses on in a string value
// ("06:30" from "6:30") with a short match. Tokens equal decoding without drafts either way.
TEST(Drafts, CallsCloseAfterTheirLastValue) {
  auto& w = test::ConstrainedWorld::Get();
  const OrderedJson tools = OrderedJson::parse(R"([
    {"type":"function","function":{"name":"set_volume","description":"d","parameters":{"type":"object",
      "properties":{"level":{"type":"integer"},"speaker":{"type":"string"}},"required":["level"]}}},
    {"type":"function","function":{"name":"set_alarm","description":"d","parameters":{"type":"object",
      "properties":{"label":{"type":"string"},"time":{"type":"string"}},"required":["time"]}}}])");
  struct Case {
    std::string utterance, output, history;
  };
  const Case cases[] = {
      {"volume 70", "<start_function_call>call:set_volume{level:70}<end_function_call><start_function_response>",
       "<start_function_call>call:set_volume{level:30,speaker:<escape>kitchen<escape>}<end_function_call><start_function_response>"},
      {"wake me up at 6:30 am", "<start_function_call>call:set_alarm{time:<escape>06:30<escape>}<end_function_call><start_function_response>",
       "<start_function_call>call:set_alarm{time:<escape>07:15<escape>,label:<escape>gym<escape>}<end_function_call><start_function_response>"},
  };
  for (const Case& c : cases) {
    ScriptedCall call(tools, c.utterance, c.output, c.history);
    // (The digit-form rule guesses "06:30" from the earlier "07:15" with its <escape>: off here.)
    const RuleRuns r = RunWithAndWithout(call, kGuessClose, c.output, c.utterance, kGuessAll & ~kGuessDigitForm);
    EXPECT_EQ(call.accepted[static_cast<size_t>(DraftSource::kClose)], 1u) << c.utterance;
    EXPECT_LT(r.with.model_calls, r.without.model_calls) << c.utterance;
    std::printf("%s: %zu passes without drafts, %zu without the close rule, %zu with it\n", c.utterance.c_str(),
                r.plain.model_calls, r.without.model_calls, r.with.model_calls);
  }
}

// The said-value rule: an earlier call's value is guessed only where the utterance says it. A number
// or an enum value the utterance lacks ("level:30" when the user says "a bit louder", "mode:cool" for
// "make it warmer") and a string it does not hold (last time's "06:30" for "07:15") are not guessed, so
// fewer guesses are refused; the utterance's own value is still guessed. Tokens equal decoding
// without drafts either way.
TEST(Drafts, EarlierValuesAreGuessedOnlyWhereTheUtteranceSaysThem) {
  const OrderedJson tools = OrderedJson::parse(R"([
    {"type":"function","function":{"name":"set_volume","description":"d","parameters":{"type":"object",
      "properties":{"level":{"type":"integer"}},"required":["level"]}}},
    {"type":"function","function":{"name":"set_mode","description":"d","parameters":{"type":"object",
      "properties":{"mode":{"type":"string","enum":["cool","heat"]}},"required":["mode"]}}},
    {"type":"function","function":{"name":"set_alarm","description":"d","parameters":{"type":"object",
      "properties":{"label":{"type":"string"},"time":{"type":"string"}},"required":["time"]}}}])");
  struct Case {
    std::string utterance, output, history;
  };
  const Case cases[] = {
      {"a bit louder please", "<start_function_call>call:set_volume{level:60}<end_function_call><start_function_response>",
       "<start_function_call>call:set_volume{level:30}<end_function_call><start_function_response>"},
      {"make it warmer", "<start_function_call>call:set_mode{mode:<escape>heat<escape>}<end_function_call><start_function_response>",
       "<start_function_call>call:set_mode{mode:<escape>cool<escape>}<end_function_call><start_function_response>"},
      {"set an alarm for 07:15", "<start_function_call>call:set_alarm{time:<escape>07:15<escape>}<end_function_call><start_function_response>",
       "<start_function_call>call:set_alarm{label:<escape>gym<escape>,time:<escape>06:30<escape>}<end_function_call><start_function_response>"},
  };
  for (const Case& c : cases) {
    ScriptedCall call(tools, c.utterance, c.output, c.history);
    // (The digit-form rule guesses the earlier time in the utterance's numbers instead: off here.)
    const RuleRuns r = RunWithAndWithout(call, kGuessSaidValue, c.output, c.utterance, kGuessAll & ~kGuessDigitForm);
    EXPECT_LT(RuleRuns::Refused(r.with), RuleRuns::Refused(r.without)) << c.utterance;
    EXPECT_LE(r.with.model_calls, r.without.model_calls) << c.utterance;
    std::printf("%s: refused guesses %zu -> %zu, passes %zu -> %zu (%zu without drafts)\n", c.utterance.c_str(),
                RuleRuns::Refused(r.without), RuleRuns::Refused(r.with), r.without.model_calls, r.with.model_calls,
                r.plain.model_calls);
  }
}

// The text-end rule: the utterance's text copied into a string value ends before the words that
// name another argument's enum value ("jazz| in the living room"), with the string's closing
// <escape>, instead of guessing on into them (each such position needs a whole-vocabulary head).
// Tokens equal decoding without drafts either way.
TEST(Drafts, CopiedTextEndsBeforeAnotherArgumentsEnumValue) {
  const OrderedJson tools = OrderedJson::parse(R"([
    {"type":"function","function":{"name":"play_music","description":"d","parameters":{"type":"object",
      "properties":{"query":{"type":"string"},"speaker":{"type":"string","enum":["kitchen","living room"]}},
      "required":["query"]}}}])");
  const std::string utterance = "play some jazz in the living room";
  const std::string output =
      "<start_function_call>call:play_music{query:<escape>jazz<escape>,speaker:<escape>living room<escape>}"
      "<end_function_call><start_function_response>";
  ScriptedCall call(tools, utterance, output, "");
  const RuleRuns r = RunWithAndWithout(call, kGuessTextEnd, output, utterance);
  EXPECT_LT(RuleRuns::Refused(r.with), RuleRuns::Refused(r.without));
  EXPECT_LE(r.with.model_calls, r.without.model_calls);
  std::printf("%s: refused guesses %zu -> %zu, passes %zu -> %zu (%zu without drafts)\n", utterance.c_str(),
              RuleRuns::Refused(r.without), RuleRuns::Refused(r.with), r.without.model_calls, r.with.model_calls,
              r.plain.model_calls);
}

// The slot rule: where a call's arguments open, the keys whose values the utterance says (an enum
// value it names, its one number for the function's one numeric key), in order, up to a required key
// it does not say ("on:"), are guessed before an earlier call's keys. Tokens equal decoding without
// drafts either way.
TEST(Drafts, KeysTheUtteranceSaysAreGuessedWhereArgumentsOpen) {
  const OrderedJson tools = OrderedJson::parse(R"([
    {"type":"function","function":{"name":"set_lights","description":"d","parameters":{"type":"object",
      "properties":{"room":{"type":"string","enum":["kitchen","bedroom"]},"on":{"type":"boolean"},
      "brightness":{"type":"integer"}},"required":["room","on"]}}}])");
  struct Case {
    std::string utterance, output, history;
  };
  const Case cases[] = {
      // the number and the enum value said, the required boolean not: "brightness:40,on:"
      {"set the kitchen lights to 40 percent",
       "<start_function_call>call:set_lights{brightness:40,on:true,room:<escape>kitchen<escape>}<end_function_call>"
       "<start_function_response>",
       "<start_function_call>call:set_lights{on:false,room:<escape>bedroom<escape>}<end_function_call><start_function_response>"},
      // a boolean key the utterance names is true: "on:true,room:<escape>kitchen<escape>}"
      {"turn on the kitchen lights",
       "<start_function_call>call:set_lights{on:true,room:<escape>kitchen<escape>}<end_function_call>"
       "<start_function_response>",
       "<start_function_call>call:set_lights{brightness:70,on:true,room:<escape>bedroom<escape>}<end_function_call>"
       "<start_function_response>"},
  };
  for (const Case& c : cases) {
    ScriptedCall call(tools, c.utterance, c.output, c.history);
    const RuleRuns r = RunWithAndWithout(call, kGuessSlots, c.output, c.utterance);
    EXPECT_GT(call.accepted[static_cast<size_t>(DraftSource::kSlot)], 0u) << c.utterance;
    // Fewer passes, or as many with fewer refused guesses (an earlier call's "brightness" here).
    EXPECT_LE(r.with.model_calls, r.without.model_calls) << c.utterance;
    EXPECT_TRUE(r.with.model_calls < r.without.model_calls || RuleRuns::Refused(r.with) < RuleRuns::Refused(r.without))
        << c.utterance;
    std::printf("%s: %zu passes without drafts, %zu without the slot rule, %zu with it (refused guesses %zu -> %zu)\n",
                c.utterance.c_str(), r.plain.model_calls, r.without.model_calls, r.with.model_calls,
                RuleRuns::Refused(r.without), RuleRuns::Refused(r.with));
  }
}

// The list rule: in an array of enum values the utterance names none of ("on weekdays"), the values
// are guessed in the schema's order (not the grammar's sorted one) from the one after the last item,
// through the ',' and <escape> between them: the days in one or two passes instead of two per day.
// Where the utterance names a value ("mon and fri") its words are guessed instead. Tokens equal
// decoding without drafts either way.
TEST(Drafts, ListsOfEnumValuesAreGuessedInTheSchemasOrder) {
  const OrderedJson tools = OrderedJson::parse(R"([
    {"type":"function","function":{"name":"set_alarm","description":"d","parameters":{"type":"object",
      "properties":{"time":{"type":"string"},"days":{"type":"array","items":{"type":"string",
      "enum":["mon","tue","wed","thu","fri","sat","sun"]}}},"required":["time"]}}}])");
  struct Case {
    std::string utterance, days;
    bool listed;  // the rule guesses (the utterance names none of the values)
  };
  const Case cases[] = {
      {"set an alarm at 8:00 on weekdays",
       "<escape>mon<escape>,<escape>tue<escape>,<escape>wed<escape>,<escape>thu<escape>,<escape>fri<escape>", true},
      {"set an alarm at 8:00 on mon and fri", "<escape>mon<escape>,<escape>fri<escape>", false},
  };
  for (const Case& c : cases) {
    const std::string output = "<start_function_call>call:set_alarm{days:[" + c.days +
                               "],time:<escape>08:00<escape>}<end_function_call><start_function_response>";
    ScriptedCall call(tools, c.utterance, output, "");
    const RuleRuns r = RunWithAndWithout(call, kGuessLists, output, c.utterance);
    const size_t listed = call.accepted[static_cast<size_t>(DraftSource::kList)];
    if (c.listed) {
      EXPECT_GE(listed, 8u) << c.utterance;  // tue..fri and the ',' before each at least
      EXPECT_LT(r.with.model_calls + 3, r.without.model_calls) << c.utterance;
    } else {
      EXPECT_EQ(listed, 0u) << c.utterance;
      EXPECT_EQ(RuleRuns::Refused(r.with), RuleRuns::Refused(r.without)) << c.utterance;
    }
    std::printf("%s: %zu passes without drafts, %zu without the list rule, %zu with it (%zu list tokens accepted)\n",
                c.utterance.c_str(), r.plain.model_calls, r.without.model_calls, r.with.model_calls, listed);
  }
}

// The rules that keep an earlier call's values from being guessed where the utterance says other
// ones, each turned off alone. The said-value rule refuses the same guesses on these calls, so it is
// off in every run. Words first: at a value the utterance's "70" is looked up before the earlier
// call's "30". Value break: the earlier call's guess ("call:set_volume{level:") stops at the value
// and looks up again there, instead of guessing on into its own "30}". String check: the earlier
// call's string "gym" is not guessed for a label the utterance says otherwise ("swim"). Tokens
// equal decoding without drafts in every run.
TEST(Drafts, EarlierCallsValuesGiveWayToTheUtterances) {
  const OrderedJson tools = OrderedJson::parse(R"([
    {"type":"function","function":{"name":"set_volume","description":"d","parameters":{"type":"object",
      "properties":{"level":{"type":"integer"}},"required":["level"]}}},
    {"type":"function","function":{"name":"set_alarm","description":"d","parameters":{"type":"object",
      "properties":{"label":{"type":"string"},"time":{"type":"string"}},"required":["time"]}}}])");
  struct Case {
    uint32_t rule;
    const char* name;
    std::string utterance, output, history;
    bool fewer_passes;  // else fewer refused guesses in as many passes
  };
  const std::string volume = "<start_function_call>call:set_volume{level:70}<end_function_call><start_function_response>";
  const std::string volume_before = "<start_function_call>call:set_volume{level:30}<end_function_call><start_function_response>";
  const Case cases[] = {
      {kGuessWordsFirst, "words first", "volume 70 please", volume, volume_before, true},
      {kGuessValueBreak, "value break", "volume 70 please", volume, volume_before, true},
      {kGuessStringCheck, "string check", "alarm at 07:15 labelled swim",
       "<start_function_call>call:set_alarm{label:<escape>swim<escape>,time:<escape>07:15<escape>}<end_function_call>"
       "<start_function_response>",
       "<start_function_call>call:set_alarm{label:<escape>gym<escape>,time:<escape>06:30<escape>}<end_function_call>"
       "<start_function_response>",
       false},
  };
  for (const Case& c : cases) {
    ScriptedCall call(tools, c.utterance, c.output, c.history);
    const RuleRuns r = RunWithAndWithout(call, c.rule, c.output, c.name, kGuessAll & ~kGuessSaidValue);
    EXPECT_LT(RuleRuns::Refused(r.with), RuleRuns::Refused(r.without)) << c.name;
    if (c.fewer_passes)
      EXPECT_LT(r.with.model_calls, r.without.model_calls) << c.name;
    else
      EXPECT_LE(r.with.model_calls, r.without.model_calls) << c.name;
    r.Print(c.name);
  }
}

// The digit-form rule: in a string value, an earlier call's value of the same key in a digit form
// (a date-time: one token a digit, which no lookup finds in order) is guessed with the utterance's
// numbers in its digit runs, through its closing <escape>. The string-start rule: a guess that
// reaches a string's start (the slot "time:" and its forced "<escape>") looks up again there, so
// the form is guessed in the same pass. Each turned off alone costs passes; tokens equal decoding
// without drafts either way.
TEST(Drafts, DateTimesTakeAnEarlierValuesFormWithTheUtterancesNumbers) {
  const OrderedJson tools = OrderedJson::parse(R"([
    {"type":"function","function":{"name":"create_calendar_event","description":"d","parameters":{"type":"object",
      "properties":{"title":{"type":"string"},"datetime":{"type":"string"}},"required":["title","datetime"]}}},
    {"type":"function","function":{"name":"alarm","description":"d","parameters":{"type":"object",
      "properties":{"label":{"type":"string"},"time":{"type":"string"}},"required":["time"]}}}])");
  struct Case {
    uint32_t rule;
    const char* name;
    std::string utterance, output, history;
    size_t formed;  // guessed tokens of the form confirmed, at least
  };
  const Case cases[] = {
      {kGuessDigitForm, "digit form", "Put Dentist in my calendar on 2026-01-21 at 08:45",
       "<start_function_call>call:create_calendar_event{datetime:<escape>2026-01-21T08:45:00<escape>,title:<escape>"
       "Dentist<escape>}<end_function_call><start_function_response>",
       "<start_function_call>call:create_calendar_event{datetime:<escape>2026-06-27T17:45:00<escape>,title:<escape>"
       "Flight to Lisbon<escape>}<end_function_call><start_function_response>",
       19},  // the whole value
      {kGuessStringStart, "string start", "wake me at 6:30",
       "<start_function_call>call:alarm{time:<escape>06:30<escape>}<end_function_call><start_function_response>",
       "<start_function_call>call:alarm{time:<escape>07:15<escape>}<end_function_call><start_function_response>", 5},
  };
  for (const Case& c : cases) {
    ScriptedCall call(tools, c.utterance, c.output, c.history);
    const RuleRuns r = RunWithAndWithout(call, c.rule, c.output, c.name);
    EXPECT_GE(call.accepted[static_cast<size_t>(DraftSource::kForm)], c.formed) << c.name;
    EXPECT_LT(r.with.model_calls, r.without.model_calls) << c.name;
    r.Print(c.name);
  }
}

// The short-parts rule: "on" in "in my calendar on 2026-01-21" names turn_on_flashlight as much as
// "calendar" names create_calendar_event unless a name's part of two letters counts half; then the
// calendar is the named tool and guessed before the earlier call's flashlight. Tokens equal
// decoding without drafts either way.
TEST(Drafts, TwoLetterNamePartsCountHalf) {
  const OrderedJson tools = OrderedJson::parse(R"([
    {"type":"function","function":{"name":"turn_on_flashlight","description":"d","parameters":{"type":"object","properties":{}}}},
    {"type":"function","function":{"name":"turn_off_flashlight","description":"d","parameters":{"type":"object","properties":{}}}},
    {"type":"function","function":{"name":"create_calendar_event","description":"d","parameters":{"type":"object",
      "properties":{"title":{"type":"string"},"datetime":{"type":"string"}},"required":["title","datetime"]}}}])");
  const std::string output =
      "<start_function_call>call:create_calendar_event{datetime:<escape>2026-01-21T08:45:00<escape>,title:<escape>"
      "Dentist<escape>}<end_function_call><start_function_response>";
  ScriptedCall call(tools, "Put Dentist in my calendar on 2026-01-21 at 08:45", output,
                    "<start_function_call>call:turn_off_flashlight{}<end_function_call><start_function_response>");
  const RuleRuns r = RunWithAndWithout(call, kGuessShortParts, output, "short parts");
  EXPECT_GT(call.accepted[static_cast<size_t>(DraftSource::kName)], 0u);
  EXPECT_LT(r.with.model_calls, r.without.model_calls);
  r.Print("short parts");
}

// An earlier output is encoded a chunk at a time; a chunk that ends inside a word ("contact" of
// "contacts") leaves that word to the next chunk, so the guess has the tokens the whole text has
// there: a repeated answer is guessed to its end, not refused at the cut.
TEST(Drafts, RepeatedAnswersAreGuessedAcrossEncodingChunks) {
  const OrderedJson tools = OrderedJson::parse(R"([
    {"type":"function","function":{"name":"show_map","description":"d","parameters":{"type":"object",
      "properties":{"query":{"type":"string"}},"required":["query"]}}}])");
  // The guess starts after "Sorry": its first 48 bytes end in "conta" of "contacts".
  const std::string answer =
      "Sorry, I can help with your phone's flashlight, contacts, email, maps, Wi-Fi, calendar, alarms and volume."
      "<end_of_turn>";
  ScriptedCall call(tools, "what can you do?", answer, answer);
  ConstrainedStats st;
  const std::vector<int32_t> out = call.Run(true, &st);
  EXPECT_EQ(call.Text(out), answer);
  // Every guess confirmed: the first pass evaluates the prompt, the rest guess the answer whole.
  EXPECT_EQ(st.accepted_tokens, st.drafted_tokens);
  std::printf("answer of %zu tokens: %zu passes, %zu of %zu guesses confirmed\n", out.size(), st.model_calls,
              st.accepted_tokens, st.drafted_tokens);
}

}  // namespace
}  // namespace fgemma
