// Shared setup for constrained-decoding tests: FunctionGemma's tokenizer, the mini model (random
// weights, real vocabulary) and a request builder.
#pragma once

#include <gtest/gtest.h>

#include "chat/call_grammar.h"
#include "chat/parse_call.h"
#include "chat/render.h"
#include "chat/request.h"
#include "random_catalog.h"
#include "runtime/call_generator.h"
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
inline void RunRandomCatalogs(size_t count, uint32_t seed) {
  auto& w = ConstrainedWorld::Get();
  CatalogGenerator gen(seed);
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

}  // namespace fgemma::test
