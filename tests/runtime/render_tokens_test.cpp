// Renders tokenize exactly like the reference renderings, and the catalog split does not change ids:
// Encode(prefix) + Encode(remainder) == Encode(prefix + remainder) (the engine prefills them apart).
#include "constrained_support.h"
#include "injection_cases.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

TEST(RenderTokens, RendersDevTokenizeLikeTheReferenceAndSplitCleanly) {
  const auto& tok = test::ConstrainedWorld::Get().tokenizer;
  auto cases = ParseOrderedJson(ReadFileToString(test::FixturePath("chat/renders-dev.json")).value(), "renders-dev.json");
  ASSERT_TRUE(cases.ok());
  size_t checked = 0, split = 0;
  for (size_t i = 0; i < cases->size(); ++i) {
    const OrderedJson& c = (*cases)[i];
    RenderOptions ro;
    ro.add_generation_prompt = c.value("add_generation_prompt", false);
    auto parts = RenderTemplateJson(c.contains("tools") ? c["tools"] : OrderedJson(), c["messages"], ro);
    if (!parts.ok()) {
      ADD_FAILURE() << "case " << i << ": " << parts.status().ToString();
      continue;
    }
    const std::string full = parts->prefix + parts->remainder;
    const std::string expected = c["expected"].get<std::string>();
    EXPECT_EQ(tok.Encode(full), tok.Encode(expected)) << "case " << i;
    auto a = tok.Encode(parts->prefix), b = tok.Encode(parts->remainder);
    if (!parts->prefix.empty() && !parts->remainder.empty()) {
      a.insert(a.end(), b.begin(), b.end());
      EXPECT_EQ(a, tok.Encode(full)) << "case " << i << ": the prefix split changes tokenization";
      ++split;
    }
    ++checked;
  }
  EXPECT_EQ(checked, cases->size());
  std::printf("%zu renders tokenize identically; %zu split into prefix + remainder without changing ids\n", checked, split);
}

// Content is text (issue 16): on every golden render whose content holds no control-token text, the
// segment-aware encoding the engine uses gives exactly the reference ids; where content does hold
// such text (quirk cases), only the template's control tokens remain.
TEST(RenderTokens, ContentAsTextKeepsEveryGoldenRendersIds) {
  const auto& tok = test::ConstrainedWorld::Get().tokenizer;
  auto cases = ParseOrderedJson(ReadFileToString(test::FixturePath("chat/renders-dev.json")).value(), "renders-dev.json");
  ASSERT_TRUE(cases.ok());
  size_t identical = 0, injected = 0;
  for (size_t i = 0; i < cases->size(); ++i) {
    const OrderedJson& c = (*cases)[i];
    RenderOptions ro;
    ro.add_generation_prompt = c.value("add_generation_prompt", false);
    auto parts = RenderTemplateJson(c.contains("tools") ? c["tools"] : OrderedJson(), c["messages"], ro);
    if (!parts.ok()) continue;  // reported by the test above
    const std::vector<int32_t> reference = tok.Encode(c["expected"].get<std::string>());
    std::vector<int32_t> ids = EncodePromptText(tok, parts->prefix, parts->prefix_controls, false);
    const auto rest = EncodePromptText(tok, parts->remainder, parts->remainder_controls, false);
    ids.insert(ids.end(), rest.begin(), rest.end());
    const auto template_controls = test::TemplateControlIds(tok, *parts);
    EXPECT_EQ(test::ControlIdsIn(tok, ids), template_controls) << "case " << i;
    if (test::ControlIdsIn(tok, reference) == template_controls) {
      EXPECT_EQ(ids, reference) << "case " << i;
      ++identical;
    } else {
      EXPECT_EQ(ids, test::ExpectedPromptIds(tok, *parts)) << "case " << i;
      ++injected;
    }
  }
  EXPECT_GT(identical, cases->size() * 9 / 10);
  std::printf("%zu golden renders token-identical with content as text; %zu hold control text in content\n", identical,
              injected);
}

}  // namespace
}  // namespace fgemma
