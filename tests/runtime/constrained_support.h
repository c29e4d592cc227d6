// Shared setup for constrained-decoding tests: FunctionGemma's tokenizer, the mini model (random
// weights, real vocabulary) and a request builder.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "chat/call_grammar.h"
#include "chat/parse_call.h"
#include "chat/render.h"
#include "chat/request.h"
#include "random_catalog.h"
#include "runtime/call_generator.h"
#include "runtime/function_caller.h"
#include "runtime/pass_batcher.h"
#include "runtime/session.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"

namespace fgemma::test {

struct ConstrainedWorld {
  Tokenizer tokenizer;
  ConstraintVocab vocab;
  std::shared_ptr<const Model> model;

  static ConstrainedWorld& Get() {
    static ConstrainedWorld* world = [] {
      auto tok = Tokenizer::FromFile(FixturePath("models/mini-bf16"));
      EXPECT_TRUE(tok.ok()) << tok.status().ToString();
      auto* w = new ConstrainedWorld{std::move(tok).value(), {}, nullptr};
      auto vocab = ConstraintVocab::Build(w->tokenizer);
      EXPECT_TRUE(vocab.ok()) << vocab.status().ToString();
      w->vocab = std::move(vocab).value();
      w->model = std::shared_ptr<const Model>(Model::Load(FixturePath("models/mini-bf16")).value());
      return w;
    }();
    return *world;
  }

  // A 2-thread session on the mini model (the constrained tests' common setup).
  std::unique_ptr<Session> NewSession(size_t context = 4096) const {
    SessionOptions so;
    so.context = context;
    so.threads = 2;
    return Session::Create(model, so).value();
  }
};

inline ChatRequest MakeRequest(const OrderedJson& tools, const std::string& utterance) {
  OrderedJson body;
  body["tools"] = tools;
  body["messages"] = OrderedJson::array(
      {{{"role", "developer"}, {"content", std::string(kDefaultDeveloperPreamble)}}, {{"role", "user"}, {"content", utterance}}});
  auto r = ParseChatRequest(body);
  EXPECT_TRUE(r.ok()) << r.status().ToString() << "\n" << body.dump();
  return std::move(r).value();
}

// Runs `count` random catalogs through constrained decoding, cycling tool_choice modes, and checks
// that every output parses and validates.
// Logits of `tokens` evaluated one at a time after the session's state, [tokens, vocab].
inline std::vector<float> LogitsOneAtATime(Session& s, const std::vector<int32_t>& tokens) {
  const size_t vocab = static_cast<size_t>(s.model().config().vocab_size);
  std::vector<float> all(tokens.size() * vocab);
  for (size_t i = 0; i < tokens.size(); ++i) {
    HeadRequest h;
    h.logits = all.data() + i * vocab;
    EXPECT_TRUE(s.Evaluate(std::span<const int32_t>(&tokens[i], 1), std::span<HeadRequest>(&h, 1)).ok());
  }
  return all;
}

// Runs `req` on a caller with a speed-up and on one without it, and checks they answer the same
// tokens with the same finish reason. Both outcomes, or nullopt (a failure recorded) when a call fails.
inline std::optional<std::pair<CallOutcome, CallOutcome>> CallBoth(FunctionCaller& with, FunctionCaller& without,
                                                                   const CallRequest& req, const std::string& what) {
  auto a = with.Call(req), b = without.Call(req);
  EXPECT_TRUE(a.ok()) << what << ": " << a.status().ToString();
  EXPECT_TRUE(b.ok()) << what << ": " << b.status().ToString();
  if (!a.ok() || !b.ok()) return std::nullopt;
  EXPECT_EQ(a->output_tokens, b->output_tokens) << what;
  EXPECT_EQ(a->finish_reason, b->finish_reason) << what;
  return std::make_pair(std::move(a).value(), std::move(b).value());
}

inline void RunRandomCatalogs(size_t count, uint32_t seed, bool keywords = false) {
  auto& w = ConstrainedWorld::Get();
  CatalogGenerator gen(seed, keywords);
  auto session = w.NewSession();
  GrammarLimits limits;
  limits.max_string_bytes = 48;
  limits.max_text_bytes = 64;
  size_t calls = 0, texts = 0;
  for (size_t i = 0; i < count; ++i) {
    const OrderedJson tools_json = gen.Tools(1 + gen.Pick(4));
    ChatRequest req = MakeRequest(tools_json, gen.Utterance());
    const ToolChoiceMode modes[] = {ToolChoiceMode::kAuto, ToolChoiceMode::kRequired, ToolChoiceMode::kNone,
                                    ToolChoiceMode::kFunction};
    ToolChoice choice{modes[i % 4], ""};
    if (choice.mode == ToolChoiceMode::kFunction) choice.function = req.tools[gen.Pick(req.tools.size())].name;
    auto grammar = CallGrammar::Compile(req.tools, choice, limits);
    ASSERT_TRUE(grammar.ok()) << grammar.status().ToString();
    auto prompt = RenderPrompt(req);
    ASSERT_TRUE(prompt.ok()) << prompt.status().ToString();
    const auto ids = w.tokenizer.Encode(prompt.value());
    CallGenerator cg(w.vocab, grammar.value(), w.model->config().vocab_size);
    std::vector<int32_t> out;
    session->Reset();
    const Status st = cg.Generate(*session, ids, ConstrainedOptions{}, &out, nullptr);
    ASSERT_TRUE(st.ok()) << "catalog " << i << ": " << st.ToString() << "\noutput so far: " << w.tokenizer.Decode(out).value() << "\n" << tools_json.dump();
    ASSERT_TRUE(cg.finished()) << "catalog " << i << " did not finish within the token cap";
    const std::string text = w.tokenizer.Decode(out).value();
    const ParsedOutput parsed = ParseModelOutput(text, req.tools);
    EXPECT_TRUE(parsed.ok()) << "catalog " << i << ": " << parsed.ErrorSummary() << "\n" << text << "\n" << tools_json.dump();
    switch (choice.mode) {
      case ToolChoiceMode::kNone: EXPECT_TRUE(parsed.calls.empty()) << text; break;
      case ToolChoiceMode::kRequired: EXPECT_FALSE(parsed.calls.empty()) << text; break;
      case ToolChoiceMode::kFunction:
        ASSERT_EQ(parsed.calls.size(), 1u) << text;
        EXPECT_EQ(parsed.calls[0].name, choice.function);
        break;
      case ToolChoiceMode::kAuto: break;
    }
    calls += parsed.calls.size();
    texts += parsed.calls.empty();
  }
  std::printf("%zu catalogs: %zu calls, %zu text answers, all parsed and validated\n", count, calls, texts);
}

// Drafts change no token: `count` random catalogs, every tool_choice mode, each decoded without
// drafts and then with drafts from sources that make guesses right and wrong: the previous
// catalog's output (an anchored "history" that diverges), this output's first half followed by
// noise (right, then wrong), the utterance, and random text. Checks tokens, the on_token sequence
// and, every fourth catalog, a token cap that falls inside a draft. Returns the drafted/accepted
// counts so callers can check that drafts were taken.
struct DraftComparison {
  size_t tokens = 0, passes = 0, drafted = 0, accepted = 0;
};
inline void CompareDrafts(size_t count, uint32_t seed, DraftComparison* result, bool keywords = false) {
  auto& w = ConstrainedWorld::Get();
  CatalogGenerator gen(seed, keywords);
  auto session = w.NewSession();
  GrammarLimits limits;
  limits.max_string_bytes = 48;
  limits.max_text_bytes = 64;
  DraftComparison totals;
  std::string previous;
  for (size_t i = 0; i < count; ++i) {
    const OrderedJson tools_json = gen.Tools(1 + gen.Pick(4));
    const std::string utterance = gen.Utterance();
    ChatRequest req = MakeRequest(tools_json, utterance);
    const ToolChoiceMode modes[] = {ToolChoiceMode::kAuto, ToolChoiceMode::kRequired, ToolChoiceMode::kNone,
                                    ToolChoiceMode::kFunction};
    ToolChoice choice{modes[i % 4], ""};
    if (choice.mode == ToolChoiceMode::kFunction) choice.function = req.tools[gen.Pick(req.tools.size())].name;
    auto grammar = CallGrammar::Compile(req.tools, choice, limits);
    ASSERT_TRUE(grammar.ok()) << grammar.status().ToString();
    const auto ids = w.tokenizer.Encode(RenderPrompt(req).value());
    auto run = [&](ConstrainedOptions opt, std::vector<int32_t>* out, std::vector<int32_t>* seen, ConstrainedStats* st) {
      opt.on_token = [seen](int32_t id) {
        seen->push_back(id);
        return true;
      };
      CallGenerator cg(w.vocab, grammar.value(), w.model->config().vocab_size);
      session->Reset();
      const Status status = cg.Generate(*session, ids, opt, out, st);
      ASSERT_TRUE(status.ok()) << "catalog " << i << ": " << status.ToString();
    };
    ConstrainedOptions plain_opt;
    plain_opt.draft = false;
    if (i % 4 == 3) plain_opt.max_tokens = 3 + gen.Pick(12);
    std::vector<int32_t> plain, plain_seen, drafted, drafted_seen;
    ConstrainedStats ps, ds;
    run(plain_opt, &plain, &plain_seen, &ps);
    std::string text;
    for (int32_t id : plain) text += w.vocab.TokenText(id);
    std::string noise;
    for (size_t k = 0; k < 12; ++k) noise += w.vocab.TokenText(static_cast<int32_t>(gen.Pick(4000) + 300));
    const std::vector<std::string> sources = {previous, text.substr(0, text.size() / 2) + noise, utterance, noise};
    ConstrainedOptions draft_opt = plain_opt;
    draft_opt.draft = true;
    draft_opt.draft_sources = sources;
    draft_opt.draft_anchored = 2;
    run(draft_opt, &drafted, &drafted_seen, &ds);
    EXPECT_EQ(drafted, plain) << "catalog " << i << "\n" << text << "\n" << tools_json.dump();
    EXPECT_EQ(drafted_seen, plain_seen) << "catalog " << i;
    EXPECT_EQ(ds.tokens, ps.tokens);
    EXPECT_LE(ds.model_calls, ps.model_calls) << "catalog " << i;
    totals.tokens += ds.tokens;
    totals.passes += ds.model_calls;
    totals.drafted += ds.drafted_tokens;
    totals.accepted += ds.accepted_tokens;
    previous = text;
  }
  std::printf("%zu catalogs: %zu tokens in %zu passes with drafts, %zu drafted, %zu accepted; all equal to no drafts\n",
              count, totals.tokens, totals.passes, totals.drafted, totals.accepted);
  *result = totals;
}

// Batching changes no token: `count` random catalogs (every tool_choice mode) decoded one after
// another on a session of its own, then two at a time on two sessions sharing a PassBatcher (their
// passes computed together); every output must be the same tokens, and must validate.
inline void CompareBatched(size_t count, uint32_t seed, bool keywords) {
  auto& w = ConstrainedWorld::Get();
  CatalogGenerator gen(seed, keywords);
  GrammarLimits limits;
  limits.max_string_bytes = 48;
  limits.max_text_bytes = 64;
  struct Job {
    ChatRequest req;
    CallGrammar grammar;
    std::vector<int32_t> ids;
  };
  std::vector<Job> jobs;
  for (size_t i = 0; i < count; ++i) {
    ChatRequest req = MakeRequest(gen.Tools(1 + gen.Pick(4)), gen.Utterance());
    const ToolChoiceMode modes[] = {ToolChoiceMode::kAuto, ToolChoiceMode::kRequired, ToolChoiceMode::kNone, ToolChoiceMode::kFunction};
    ToolChoice choice{modes[i % 4], ""};
    if (choice.mode == ToolChoiceMode::kFunction) choice.function = req.tools[gen.Pick(req.tools.size())].name;
    auto grammar = CallGrammar::Compile(req.tools, choice, limits);
    ASSERT_TRUE(grammar.ok()) << grammar.status().ToString();
    auto ids = w.tokenizer.Encode(RenderPrompt(req).value());
    jobs.push_back({std::move(req), std::move(grammar).value(), std::move(ids)});
  }
  auto decode = [&](Session& session, const Job& job, std::vector<int32_t>* out) {
    CallGenerator cg(w.vocab, job.grammar, w.model->config().vocab_size);
    session.Reset();
    ConstrainedOptions opt;
    opt.draft = false;
    const Status st = cg.Generate(session, job.ids, opt, out, nullptr);
    EXPECT_TRUE(st.ok()) << st.ToString();
  };
  std::vector<std::vector<int32_t>> alone(count), together(count);
  {
    auto session = w.NewSession();
    for (size_t i = 0; i < count; ++i) decode(*session, jobs[i], &alone[i]);
  }
  auto pool = std::make_shared<ThreadPool>(2);
  auto batcher = PassBatcher::Create(w.model, 256, 4096, pool);
  ASSERT_TRUE(batcher.ok()) << batcher.status().ToString();
  batcher.value()->set_gather_wait(std::chrono::seconds(1));  // shared passes even on a loaded machine
  auto shared_session = [&] {
    SessionOptions so;
    so.context = 4096;
    so.threads = 2;
    so.pool = pool;
    so.batcher = batcher.value();
    return Session::Create(w.model, so).value();
  };
  std::unique_ptr<Session> sessions[2] = {shared_session(), shared_session()};
  std::vector<std::thread> drivers;
  for (size_t lane = 0; lane < 2; ++lane) {
    drivers.emplace_back([&, lane] {
      PassBatcher::Participation active(batcher.value().get());
      for (size_t i = lane; i < count; i += 2) decode(*sessions[lane], jobs[i], &together[i]);
    });
  }
  for (auto& d : drivers) d.join();
  size_t tokens = 0;
  for (size_t i = 0; i < count; ++i) {
    EXPECT_EQ(together[i], alone[i]) << "catalog " << i;
    const ParsedOutput parsed = ParseModelOutput(w.tokenizer.Decode(alone[i]).value(), jobs[i].req.tools);
    EXPECT_TRUE(parsed.ok()) << "catalog " << i << ": " << parsed.ErrorSummary();
    tokens += alone[i].size();
  }
  const PassBatcher::Stats st = batcher.value()->stats();
  EXPECT_GT(st.shared, 0u) << "no pass served both sessions";
  std::printf("%zu catalogs, %zu tokens: the same alone and batched (%llu passes, %llu shared)\n", count, tokens,
              static_cast<unsigned long long>(st.passes), static_cast<unsigned long long>(st.shared));
}

}  // namespace fgemma::test
