// Renders tokenize exactly like the reference renderings, and the catalog split does not change ids:
// Encode(prefix) + Encode(remainder) == Encode(prefix + remainder) (the engine prefills them apart).
#include "constrained_support.h"
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

}  // namespace
}  // namespace fgemma
