// Helpers shared by the chat tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "chat/chat_json.h"
#include "chat/render.h"
#include "chat/request.h"

namespace fgemma::test {

// Parses JSON text or fails the test.
inline OrderedJson J(std::string_view text) {
  auto j = ParseOrderedJson(text, "test input");
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  return j.ok() ? std::move(j).value() : OrderedJson();
}

// Where two strings first differ, with context, for failure messages.
inline std::string FirstDifference(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  const size_t from = i < 60 ? 0 : i - 60;
  return "first difference at byte " + std::to_string(i) + " (lengths " + std::to_string(want.size()) + " vs " +
         std::to_string(got.size()) + ")\n  want ..." + want.substr(from, i - from + 60) + "\n  got  ..." +
         got.substr(from, i - from + 60);
}

// Renders {tools, messages} (validated) with the given options.
inline Result<std::string> RenderRequest(const OrderedJson& tools, const OrderedJson& messages, bool add_generation_prompt,
                                         TemplateKind kind = TemplateKind::kOfficial, const std::string& bos = "<bos>") {
  OrderedJson body = {{"messages", messages}};
  if (!tools.is_null()) body["tools"] = tools;
  FGEMMA_TRY(ChatRequest req, ParseChatRequest(body, RequestFormat::kTemplateInput));
  RenderOptions options;
  options.add_generation_prompt = add_generation_prompt;
  options.template_kind = kind;
  options.bos = bos;
  return RenderPrompt(req, options);
}

}  // namespace fgemma::test
