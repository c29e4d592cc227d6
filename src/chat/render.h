// Prompt rendering for FunctionGemma: byte-identical to the official chat template
// (google/functiongemma-270m-it) rendered the way Hugging Face's apply_chat_template renders it
// (jinja2 with trim_blocks and lstrip_blocks), quirks included. A native port of the template,
// statement by statement, over the request's JSON (see render.cpp).
#pragma once

#include <string>
#include <string_view>

#include <span>
#include <vector>

#include "chat/call_format.h"
#include "chat/chat_json.h"
#include "chat/request.h"
#include "util/status.h"

namespace fgemma {

enum class TemplateKind {
  kOfficial,         // chat_template.jinja of google/functiongemma-270m-it
  kDefaultPreamble,  // GGUF-conversion variant: with tools but no system/developer message it
                     // writes the developer preamble kDefaultDeveloperPreamble itself
};

inline constexpr std::string_view kDefaultDeveloperPreamble =
    "You are a model that can do function calling with the following functions";

struct RenderOptions {
  bool add_generation_prompt = true;
  std::string bos = "<bos>";  // the template's bos_token; "" when the tokenizer adds BOS itself
  TemplateKind template_kind = TemplateKind::kOfficial;
};

// The whole prompt.
Result<std::string> RenderPrompt(const ChatRequest& request, const RenderOptions& options = {});

// The prompt split where the engine caches: `prefix` is BOS plus the developer turn (the first
// system/developer message and every function declaration, through "<end_of_turn>\n"); it depends
// only on the tools and that message. `remainder` is everything after; prefix + remainder is
// exactly RenderPrompt. Without tools or a leading system/developer message the prefix is only BOS.
// Each part also lists where the template wrote its control tokens (<bos>, <start_of_turn>,
// <escape>, ...): everything else is text, and client content among it never becomes a control token
// (see EncodePromptText in runtime/prompt_tokens.h).
struct PromptParts {
  std::string prefix;
  std::string remainder;
  std::vector<PromptOut::Span> prefix_controls;
  std::vector<PromptOut::Span> remainder_controls;
};
Result<PromptParts> RenderPromptParts(const ChatRequest& request, const RenderOptions& options = {});
Result<std::string> RenderCatalogPrefix(const ChatRequest& request, const RenderOptions& options = {});
Result<std::string> RenderRemainder(const ChatRequest& request, const RenderOptions& options = {});

// Renders `tools` (null or an array) and `messages` as the template would, without validating them
// first: errors only where jinja2 raises (or for values whose Python repr would be printed). For
// differential testing against jinja2; engine code renders validated ChatRequests.
Result<PromptParts> RenderTemplateJson(const OrderedJson& tools, const OrderedJson& messages,
                                       const RenderOptions& options = {});

}  // namespace fgemma
