// Constrained decoding: every generated call parses and validates, in every tool_choice mode, and the
// restricted head and jump-forward change no token.
#include "constrained_support.h"
#include "runtime/follow_text.h"

namespace fgemma {
namespace {

using test::ConstrainedWorld;

// Feeds text with control tokens spelled out to a matcher.
bool FeedText(CallMatcher& m, std::string_view text) {
  const std::pair<std::string_view, int> marks[] = {{"<start_function_call>", kSymStartCall}, {"<end_function_call>", kSymEndCall},
                                                    {"<escape>", kSymEscape}, {"<start_function_response>", kSymStartResponse},
                                                    {"<end_of_turn>", kSymEndOfTurn}};
  size_t i = 0;
  while (i < text.size()) {
    bool matched = false;
    for (const auto& [mark, sym] : marks) {
      if (text.substr(i, mark.size()) == mark) {
        if (!m.Feed(sym)) return false;
        i += mark.size();
        matched = true;
        break;
      }
    }
    if (!matched && !m.Feed(static_cast<uint8_t>(text[i++]))) return false;
  }
  return true;
}

TEST(CallGrammar, AcceptsFormattedCallsAndRejectsViolations) {
  auto tools = ParseTools(OrderedJson::parse(R"([{"type":"function","function":{"name":"set_light","description":"d",
    "parameters":{"type":"object","properties":{"room":{"type":"string","enum":["kitchen","hall"]},
    "level":{"type":"integer"},"on":{"type":"boolean"},"rgb":{"type":"array","items":{"type":"number"}},
    "who":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}},"required":["room"]}}},
    {"type":"function","function":{"name":"ping","description":"p","parameters":{"type":"object","properties":{}}}}])"));
  ASSERT_TRUE(tools.ok()) << tools.status().ToString();
  auto g = CallGrammar::Compile(tools.value(), ToolChoice{});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto accepts = [&](std::string_view text) {
    CallMatcher m(&g.value());
    return FeedText(m, text) && m.Done();
  };
  EXPECT_TRUE(accepts("<start_function_call>call:set_light{level:-3,on:true,rgb:[0.5,1e-05,2],room:<escape>kitchen<escape>,"
                      "who:{name:<escape>Ann, \"A\" {x}<escape>}}<end_function_call><start_function_response>"));
  EXPECT_TRUE(accepts("<start_function_call>call:ping{}<end_function_call><start_function_call>call:set_light{room:<escape>hall<escape>}"
                      "<end_function_call><end_of_turn>"));
  EXPECT_TRUE(accepts("Sure, done.<end_of_turn>"));
  EXPECT_FALSE(accepts("<start_function_call>call:set_light{}<end_function_call><end_of_turn>"));               // required
  EXPECT_FALSE(accepts("<start_function_call>call:set_lights{room:<escape>hall<escape>}<end_function_call><end_of_turn>"));
  EXPECT_FALSE(accepts("<start_function_call>call:set_light{room:<escape>attic<escape>}<end_function_call><end_of_turn>"));
  EXPECT_FALSE(accepts("<start_function_call>call:set_light{room:<escape>hall<escape>,level:1.5}<end_function_call><end_of_turn>"));
  EXPECT_FALSE(accepts("<start_function_call>call:set_light{room:<escape>hall<escape>,room:<escape>hall<escape>}<end_function_call><end_of_turn>"));
  EXPECT_FALSE(accepts("<start_function_call>call:set_light{room:<escape>hall<escape>,who:{}}<end_function_call><end_of_turn>"));
  EXPECT_FALSE(accepts("<start_function_call>call:ping{x:1}<end_function_call><end_of_turn>"));
  // Strings must be whole UTF-8 and may not spell the escape marker.
  EXPECT_FALSE(accepts("<start_function_call>call:set_light{room:<escape>hall<escape>,who:{name:<escape>a<escape>b<escape>}}"
                       "<end_function_call><end_of_turn>"));
  CallMatcher m(&g.value());
  EXPECT_TRUE(FeedText(m, "<start_function_call>call:set_light{room:<escape>hall<escape>,who:{name:<escape>"));
  EXPECT_FALSE(CallMatcher(m).FeedBytes("<escape>"));
  EXPECT_FALSE(CallMatcher(m).FeedBytes("\xC3"
                                        "A"));
  // tool_choice: none forbids calls; a named function forbids the others and a second call.
  auto none = CallGrammar::Compile(tools.value(), ToolChoice{ToolChoiceMode::kNone, ""}).value();
  CallMatcher n(&none);
  EXPECT_FALSE(n.Feed(kSymStartCall));
  auto named = CallGrammar::Compile(tools.value(), ToolChoice{ToolChoiceMode::kFunction, "ping"}).value();
  CallMatcher p(&named);
  EXPECT_FALSE(FeedText(p, "<start_function_call>call:set"));
  CallMatcher p2(&named);
  EXPECT_TRUE(FeedText(p2, "<start_function_call>call:ping{}<end_function_call>"));
  EXPECT_FALSE(p2.Accepts(kSymStartCall));
  EXPECT_FALSE(CallGrammar::Compile(tools.value(), ToolChoice{ToolChoiceMode::kFunction, "nope"}).ok());
}

// LaterKeyOpen (the draft guesser's close rule): whether the innermost object still has a declared
// property sorting after every written one, through nested values and free-key objects.
TEST(CallGrammar, LaterKeyOpenLooksAtTheInnermostObject) {
  auto tools = ParseTools(OrderedJson::parse(R"([{"type":"function","function":{"name":"f","description":"d",
    "parameters":{"type":"object","properties":{"b":{"type":"integer"},"d":{"type":"object","properties":{"x":{"type":"string"},
    "y":{"type":"integer"}}},"f":{"type":"object"},"h":{"type":"boolean"}}}}}])"));
  ASSERT_TRUE(tools.ok()) << tools.status().ToString();
  auto g = CallGrammar::Compile(tools.value(), ToolChoice{});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto open_after = [&](std::string_view text) {
    CallMatcher m(&g.value());
    EXPECT_TRUE(FeedText(m, text)) << text;
    return m.LaterKeyOpen();
  };
  EXPECT_FALSE(open_after(""));                                        // outside any object
  EXPECT_TRUE(open_after("<start_function_call>call:f{"));             // nothing written yet
  EXPECT_TRUE(open_after("<start_function_call>call:f{b:12"));         // d, f, h sort after b
  EXPECT_FALSE(open_after("<start_function_call>call:f{h:true"));      // b, d, f are left, all before h
  EXPECT_TRUE(open_after("<start_function_call>call:f{d:{x:<escape>a<escape>"));  // inner: y after x
  EXPECT_FALSE(open_after("<start_function_call>call:f{d:{y:3"));      // inner: x only, before y
  EXPECT_TRUE(open_after("<start_function_call>call:f{d:{y:3},"));     // outer again: f, h after d
  EXPECT_TRUE(open_after("<start_function_call>call:f{f:{"));          // free keys: anything may come
}

// At the byte cap a text or string may not start a character it has no room to finish: otherwise no
// byte and no closing symbol would be allowed (found by the 200-catalog test: free text ending in 0xE4).
TEST(CallGrammar, CappedTextNeverEndsInHalfACharacter) {
  auto tools = ParseTools(OrderedJson::parse(R"([{"type":"function","function":{"name":"note","description":"d",
    "parameters":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}}])"));
  ASSERT_TRUE(tools.ok()) << tools.status().ToString();
  GrammarLimits limits;
  limits.max_text_bytes = 6;
  limits.max_string_bytes = 6;
  auto g = CallGrammar::Compile(tools.value(), ToolChoice{}, limits).value();
  for (const std::string lead : {"\xC3", "\xE4", "\xF0"}) {
    const size_t len = lead == "\xC3" ? 2 : lead == "\xE4" ? 3 : 4;
    for (size_t used = 0; used < 6; ++used) {
      const bool fits = used + len <= 6;
      CallMatcher text(&g);
      ASSERT_TRUE(text.FeedBytes(std::string(used, 'a')));
      EXPECT_EQ(CallMatcher(text).FeedBytes(lead), fits) << "text, " << used << " bytes used, lead " << len;
      CallMatcher str(&g);
      ASSERT_TRUE(FeedText(str, "<start_function_call>call:note{text:<escape>" + std::string(used, 'a')));
      EXPECT_EQ(CallMatcher(str).FeedBytes(lead), fits) << "string, " << used << " bytes used, lead " << len;
    }
  }
  CallMatcher full(&g);
  ASSERT_TRUE(full.FeedBytes("ab\xE4\xB8\x80" "c"));  // 6 bytes: "ab一c"
  EXPECT_FALSE(CallMatcher(full).FeedBytes("d"));
  EXPECT_TRUE(full.Feed(kSymEndOfTurn));
}

// The tokens `vocab` allows after `m`, by Allowed (ids and the shared text set) or by a whole
// vocabulary Search (byte tokens only), as a flag per id.
std::vector<bool> TokensAllowed(const ConstraintVocab& vocab, const CallMatcher& m, bool search) {
  auto scratch = vocab.NewScratch(m);
  std::vector<int32_t> ids;
  const ConstraintVocab::TextSet* text = nullptr;
  if (search) {
    vocab.Search(m, scratch, &ids);
  } else {
    vocab.Allowed(m, scratch, &ids, &text);
  }
  std::vector<bool> in(static_cast<size_t>(vocab.vocab_size()), false);
  for (int32_t id : ids) in[static_cast<size_t>(id)] = true;
  if (text != nullptr) {
    for (size_t id = 0; id < in.size(); ++id)
      if (text->mask[id >> 6] >> (id & 63) & 1) in[id] = true;
  }
  return in;
}

// Near a string's or a text's byte cap the allowed set is the full-room set cut by each token's
// room need: it must equal a full vocabulary search at every fill level, ASCII or mid-character.
TEST(ConstraintVocab, AllowedNearTheCapEqualsTheSearch) {
  auto& w = ConstrainedWorld::Get();
  auto tools = ParseTools(OrderedJson::parse(R"([{"type":"function","function":{"name":"note","description":"d",
    "parameters":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}}])"));
  ASSERT_TRUE(tools.ok());
  const size_t cap = w.vocab.max_token_room() + 8;  // starts with room for every token
  GrammarLimits limits;
  limits.max_text_bytes = static_cast<uint32_t>(cap);
  limits.max_string_bytes = static_cast<uint32_t>(cap);
  auto g = CallGrammar::Compile(tools.value(), ToolChoice{}, limits).value();
  auto set_of = [&](const CallMatcher& m, bool search) { return TokensAllowed(w.vocab, m, search); };
  size_t checked = 0;
  for (const std::string prefix : {std::string("<start_function_call>call:note{text:<escape>"), std::string()}) {
    for (const std::string unit : {std::string("a"), std::string("\xE4\xB8\x80"), std::string("\xC3")}) {
      CallMatcher m(&g);
      ASSERT_TRUE(FeedText(m, prefix));
      (void)set_of(m, false);  // the full-room set of this state, cached as the first step would
      for (size_t used = 6; used + (unit == "\xC3" ? 2 : unit.size()) <= cap; used += unit == "\xC3" ? 1 : unit.size()) {
        CallMatcher at(m);
        if (unit == "\xC3") {  // a pending continuation byte: "a" x used, then lead byte 0xC3
          ASSERT_TRUE(at.FeedBytes(std::string(used, 'a') + unit));
        } else {
          std::string fill;
          while (fill.size() < used) fill += unit;
          ASSERT_TRUE(at.FeedBytes(fill));
        }
        // Search covers byte tokens only; Allowed adds the control tokens the state accepts.
        const std::vector<bool> fast = set_of(at, false), slow = set_of(at, true);
        for (size_t id = 0; id < fast.size(); ++id) {
          if (fast[id] == slow[id]) continue;
          CallMatcher probe(at);
          ASSERT_TRUE(fast[id] && w.vocab.FeedToken(probe, static_cast<int32_t>(id)) && w.vocab.SymbolOf(static_cast<int32_t>(id)) >= 256)
              << "id " << id << (fast[id] ? " allowed, search refuses" : " refused, search allows") << "; prefix '"
              << prefix << "' unit " << unit.size() << " used " << used;
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 2 * w.vocab.max_token_room());
  std::printf("%zu states checked; the longest token needs %zu bytes of room\n", checked, w.vocab.max_token_room());
}

// The shared free-text sets are built from the text rules alone (CallMatcher::TextAccepts): in
// every kind of text state (mid-character with each lead byte's range, "<escape>" partly spelled)
// of a string and of a text answer they allow exactly the tokens a search through the matcher does.
TEST(ConstraintVocab, SharedTextSetsEqualTheSearch) {
  auto& w = ConstrainedWorld::Get();
  auto tools = ParseTools(OrderedJson::parse(R"([{"type":"function","function":{"name":"note","description":"d",
    "parameters":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}}])"));
  ASSERT_TRUE(tools.ok());
  auto g = CallGrammar::Compile(tools.value(), ToolChoice{}, GrammarLimits{}).value();
  size_t keys = 0;
  for (const std::string prefix : {std::string("<start_function_call>call:note{text:<escape>a"), std::string("a")}) {
    for (const std::string tail : {"", "\xC3", "\xE0", "\xED", "\xF0", "\xF4", "\xE4\xB8", "\xF0\x9F", "<", "<esc", "<escape"}) {
      CallMatcher m(&g);
      ASSERT_TRUE(FeedText(m, prefix + tail)) << tail;
      uint32_t key = 0, room = 0;
      ASSERT_TRUE(m.TextState(&key, &room));
      const std::vector<bool> fast = TokensAllowed(w.vocab, m, false), slow = TokensAllowed(w.vocab, m, true);
      size_t allowed = 0;
      for (size_t id = 0; id < fast.size(); ++id) {
        allowed += slow[id];
        if (fast[id] == slow[id]) continue;
        CallMatcher probe(m);
        ASSERT_TRUE(fast[id] && w.vocab.FeedToken(probe, static_cast<int32_t>(id)) && w.vocab.SymbolOf(static_cast<int32_t>(id)) >= 256)
            << "id " << id << (fast[id] ? " allowed, search refuses" : " refused, search allows") << "; after '" << prefix + tail << "'";
      }
      EXPECT_GT(allowed, 0u) << tail;
      ++keys;
    }
  }
  EXPECT_EQ(keys, 22u);
}

// At the turn's start (tool_choice auto or none) the ordinary tokens allowed are the shared set of
// a text not yet begun, not a search of their own: the same tokens as the search, with full room
// and with a cap below the longest token; required has no text and keeps the search.
TEST(ConstraintVocab, AllowedAtTheTurnStartEqualsTheSearch) {
  auto& w = ConstrainedWorld::Get();
  auto tools = ParseTools(OrderedJson::parse(R"([{"type":"function","function":{"name":"note","description":"d",
    "parameters":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}}])"));
  ASSERT_TRUE(tools.ok());
  for (ToolChoiceMode mode : {ToolChoiceMode::kAuto, ToolChoiceMode::kNone, ToolChoiceMode::kRequired}) {
    for (uint32_t cap : {uint32_t{4096}, uint32_t{5}}) {
      GrammarLimits limits;
      limits.max_text_bytes = cap;
      ToolChoice choice;
      choice.mode = mode;
      auto g = CallGrammar::Compile(tools.value(), choice, limits).value();
      const CallMatcher start(&g);
      uint32_t key = 0, room = 0;
      ASSERT_EQ(start.TextStart(&key, &room), mode != ToolChoiceMode::kRequired);
      if (mode != ToolChoiceMode::kRequired) EXPECT_EQ(room, cap);
      const std::vector<bool> fast = TokensAllowed(w.vocab, start, false), slow = TokensAllowed(w.vocab, start, true);
      size_t text_tokens = 0;
      for (size_t id = 0; id < fast.size(); ++id) {
        text_tokens += slow[id];
        if (fast[id] == slow[id]) continue;
        CallMatcher probe(start);  // only control tokens (which Search leaves out) may differ
        ASSERT_TRUE(fast[id] && w.vocab.FeedToken(probe, static_cast<int32_t>(id)) && w.vocab.SymbolOf(static_cast<int32_t>(id)) >= 256)
            << "id " << id << (fast[id] ? " allowed, search refuses" : " refused, search allows") << "; cap " << cap;
      }
      if (mode == ToolChoiceMode::kRequired) EXPECT_EQ(text_tokens, 0u);
      else EXPECT_GT(text_tokens, cap > 100 ? 100000u : 1000u) << "cap " << cap;
    }
  }
}

// The structural-state cache FunctionCaller keeps across requests changes no token: each catalog is
// generated without it, then twice with one cache (filling it, then reading it).
TEST(ConstrainedDecoding, AllowedCacheChangesNothing) {
  auto& w = ConstrainedWorld::Get();
  test::CatalogGenerator gen(31);
  auto session = w.NewSession();
  GrammarLimits limits;
  limits.max_string_bytes = 24;
  limits.max_text_bytes = 32;
  size_t hits_possible = 0;
  for (size_t i = 0; i < 8; ++i) {
    ChatRequest req = test::MakeRequest(gen.Tools(1 + gen.Pick(3)), gen.Utterance());
    const ToolChoiceMode modes[] = {ToolChoiceMode::kAuto, ToolChoiceMode::kRequired};
    auto grammar = CallGrammar::Compile(req.tools, ToolChoice{modes[i % 2], ""}, limits).value();
    const auto ids = w.tokenizer.Encode(RenderPrompt(req).value());
    std::vector<int32_t> plain, first, second;
    session->Reset();
    ASSERT_TRUE(CallGenerator(w.vocab, grammar, w.model->config().vocab_size).Generate(*session, ids, {}, &plain, nullptr).ok());
    AllowedCache cache;
    session->Reset();
    ASSERT_TRUE(CallGenerator(w.vocab, grammar, w.model->config().vocab_size, &cache).Generate(*session, ids, {}, &first, nullptr).ok());
    const size_t entries = cache.sets.size();
    session->Reset();
    ASSERT_TRUE(CallGenerator(w.vocab, grammar, w.model->config().vocab_size, &cache).Generate(*session, ids, {}, &second, nullptr).ok());
    EXPECT_EQ(first, plain) << "catalog " << i;
    EXPECT_EQ(second, plain) << "catalog " << i;
    EXPECT_EQ(cache.sets.size(), entries) << "the warm run met no new state";
    hits_possible += entries;
  }
  EXPECT_GT(hits_possible, 8u);
}

// `follow` writes the given output through the same steps (for timing real calls on random
// weights) and refuses text the grammar does not allow, naming the byte.
TEST(ConstrainedDecoding, FollowWritesTheGivenCall) {
  auto& w = ConstrainedWorld::Get();
  ChatRequest req = test::MakeRequest(OrderedJson::parse(R"([{"type":"function","function":{"name":"set_light","description":"d",
    "parameters":{"type":"object","properties":{"room":{"type":"string","enum":["kitchen","hall"]},
    "level":{"type":"integer"},"note":{"type":"string"}},"required":["room"]}}}])"), "kitchen light to 40, say hi");
  auto grammar = CallGrammar::Compile(req.tools, ToolChoice{}).value();
  const auto ids = w.tokenizer.Encode(RenderPrompt(req).value());
  auto session = w.NewSession(2048);
  const std::string call =
      "<start_function_call>call:set_light{level:40,note:<escape>hi there, café<escape>,room:<escape>kitchen<escape>}"
      "<end_function_call>";
  FollowText follow(w.vocab, call);
  ConstrainedOptions opt;
  opt.choice_hook = &follow;
  std::vector<int32_t> out;
  ConstrainedStats stats;
  ASSERT_TRUE(CallGenerator(w.vocab, grammar, w.model->config().vocab_size).Generate(*session, ids, opt, &out, &stats).ok());
  const std::string text = w.tokenizer.Decode(out).value();
  EXPECT_EQ(text.substr(0, call.size()), call);
  EXPECT_GT(stats.head_steps, 3u);
  EXPECT_GT(stats.forced_tokens, 3u);
  FollowText departing(w.vocab, "<start_function_call>call:set_light{room:<escape>garage<escape>}");
  opt.choice_hook = &departing;
  session->Reset();
  const Status bad = CallGenerator(w.vocab, grammar, w.model->config().vocab_size).Generate(*session, ids, opt, &out, nullptr);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.ToString().find("byte 49: no allowed token starts 'garage"), std::string::npos) << bad.ToString();
}

TEST(ConstrainedDecoding, RandomCatalogsAlwaysParseAndValidate) { test::RunRandomCatalogs(24, 7); }

TEST(ConstrainedDecoding, RestrictedHeadAndJumpForwardChangeNothing) {
  auto& w = ConstrainedWorld::Get();
  test::CatalogGenerator gen(99);
  auto session = w.NewSession();
  size_t total_tokens = 0, restricted = 0, forced = 0;
  for (size_t i = 0; i < 8; ++i) {
    ChatRequest req = test::MakeRequest(gen.Tools(2 + gen.Pick(3)), gen.Utterance());
    auto grammar = CallGrammar::Compile(req.tools, ToolChoice{ToolChoiceMode::kRequired, ""}).value();
    const auto ids = w.tokenizer.Encode(RenderPrompt(req).value());
    std::vector<int32_t> fast, plain;
    ConstrainedStats fs, ps;
    CallGenerator a(w.vocab, grammar, w.model->config().vocab_size);
    session->Reset();
    ASSERT_TRUE(a.Generate(*session, ids, ConstrainedOptions{}, &fast, &fs).ok());
    ConstrainedOptions off;
    off.restricted_head = false;
    off.jump_forward = false;
    CallGenerator b(w.vocab, grammar, w.model->config().vocab_size);
    session->Reset();
    ASSERT_TRUE(b.Generate(*session, ids, off, &plain, &ps).ok());
    EXPECT_EQ(fast, plain) << "catalog " << i;
    EXPECT_EQ(ps.restricted_steps, 0u);
    EXPECT_EQ(ps.forced_tokens, 0u);
    total_tokens += fs.tokens;
    restricted += fs.restricted_steps;
    forced += fs.forced_tokens;
  }
  EXPECT_GT(restricted, 0u);
  EXPECT_GT(forced, 0u);
  std::printf("%zu tokens: %zu by jump-forward, %zu restricted-head steps\n", total_tokens, forced, restricted);
}

}  // namespace
}  // namespace fgemma

namespace fgemma {
namespace {
// Issue 31: catalogs mixing every enforced keyword (numeric enums and ranges, steps, string
// lengths, patterns and formats, item counts, const): the random-weight model writes anything the
// grammar allows, and every call still validates; drafts and batching change no token.
TEST(ConstrainedDecoding, KeywordCatalogsAlwaysValidate) { test::RunRandomCatalogs(24, 31, true); }
TEST(ConstrainedDecoding, KeywordCatalogsDraftsChangeNothing) {
  test::DraftComparison totals;
  test::CompareDrafts(12, 31, &totals, true);
}
TEST(ConstrainedDecoding, KeywordCatalogsBatchingChangesNothing) { test::CompareBatched(8, 31, true); }
}  // namespace
}  // namespace fgemma
