// fgemma render: prints the exact FunctionGemma prompt for a request, as the official chat template
// rendered by Hugging Face's apply_chat_template would produce it.
#include <cstdio>

#include "chat/render.h"
#include "runtime/prompt_tokens.h"
#include "chat/request.h"
#include "chat/template_id.h"
#include "command.h"
#include "runtime/loaded_model.h"
#include "util/mapped_file.h"

namespace fgemma::cli {
namespace {

struct RenderArgs {
  std::string request, model, chat_template, bos = "<bos>";
  bool no_generation_prompt = false;
  bool raw = false;
  bool ids = false;                   // print token ids (needs --model or --tokenizer)
  bool trust_content_tokens = false;  // with --ids
  std::string tokenizer;
};

// The template kind of a --chat-template file: a .jinja file, or a JSON file with `chat_template`
// (tokenizer_config.json).
Result<TemplateKind> TemplateKindOf(const std::string& path) {
  FGEMMA_TRY(std::string text, ReadFileToString(path));
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0) {
    FGEMMA_TRY(OrderedJson config, ParseOrderedJson(text, path));
    auto it = config.find("chat_template");
    if (it == config.end() || !it->is_string()) return InvalidArgument(path + ": no string 'chat_template'");
    text = it->get<std::string>();
  }
  auto kind = IdentifyChatTemplate(text);
  if (!kind.ok()) return kind.status().WithContext(path);
  return kind;
}

int RunRender(const RenderArgs& a) {
  RenderOptions options;
  options.bos = a.bos;
  if (!a.model.empty() && a.chat_template.empty()) {
    // The model's own template (tokenizer_config.json or GGUF metadata) picks the variant; one
    // fgemma does not render exactly is an error rather than a silently different prompt.
    auto t = LoadTemplateFor(a.model);
    if (!t.ok()) return Fail(t.status().ToString());
    options.template_kind = t->kind;
  }
  if (!a.chat_template.empty()) {
    auto kind = TemplateKindOf(a.chat_template);
    if (!kind.ok()) return Fail(kind.status().ToString());
    options.template_kind = *kind;
  }
  auto text = ReadFileToString(a.request);
  if (!text.ok()) return Fail(text.status().ToString());
  Result<std::string> prompt = std::string();
  std::vector<PromptOut::Span> controls;
  if (a.raw) {
    auto body = ParseOrderedJson(*text, a.request);
    if (!body.ok()) return Fail(body.status().ToString());
    if (!body->is_object()) return Fail(a.request + ": must be a JSON object");
    // Checked before it is read: value("add_generation_prompt", true) throws on a non-boolean.
    auto agp = body->find("add_generation_prompt");
    if (agp != body->end() && !agp->is_boolean())
      return Fail(a.request + ": add_generation_prompt: must be a boolean, got " + JsonKindName(*agp));
    options.add_generation_prompt = (agp == body->end() || agp->get<bool>()) && !a.no_generation_prompt;
    auto parts = RenderTemplateJson(body->value("tools", OrderedJson()), body->value("messages", OrderedJson()), options);
    if (!parts.ok()) return Fail(parts.status().WithContext(a.request).ToString());
    prompt = parts->prefix + parts->remainder;
    controls = parts->prefix_controls;
    for (PromptOut::Span c : parts->remainder_controls) controls.push_back({c.offset + parts->prefix.size(), c.length});
  } else {
    auto request = ParseChatRequestText(*text, a.request);
    if (!request.ok()) return Fail(request.status().ToString());
    for (const auto& w : request->warnings) std::fprintf(stderr, "fgemma: warning: %s\n", w.c_str());
    options.add_generation_prompt = request->add_generation_prompt && !a.no_generation_prompt;
    auto parts = RenderPromptParts(*request, options);
    if (!parts.ok()) return Fail(parts.status().WithContext(a.request).ToString());
    prompt = parts->prefix + parts->remainder;
    controls = parts->prefix_controls;
    for (PromptOut::Span c : parts->remainder_controls) controls.push_back({c.offset + parts->prefix.size(), c.length});
  }
  if (a.ids) {
    if (a.model.empty() && a.tokenizer.empty()) return Fail("--ids needs --model or --tokenizer");
    auto tokenizer = LoadTokenizerFor(a.model, a.tokenizer);
    if (!tokenizer.ok()) return Fail(tokenizer.status().ToString());
    const std::vector<int32_t> ids = EncodePromptText(*tokenizer, *prompt, controls, a.trust_content_tokens);
    std::string line = "[";
    for (size_t i = 0; i < ids.size(); ++i) line += (i ? "," : "") + std::to_string(ids[i]);
    line += "]\n";
    return std::fwrite(line.data(), 1, line.size(), stdout) == line.size() && std::fflush(stdout) == 0
               ? 0
               : Fail("writing the ids failed");
  }
  if (a.trust_content_tokens) return Fail("--trust-content-tokens applies to --ids only");
  if (std::fwrite(prompt->data(), 1, prompt->size(), stdout) != prompt->size()) return Fail("writing the prompt failed");
  return std::fflush(stdout) == 0 ? 0 : Fail("writing the prompt failed");
}

const CommandRegistration kRender(50, [](CLI::App& app) -> std::function<int()> {
  auto a = std::make_shared<RenderArgs>();
  auto* cmd = app.add_subcommand("render", "Print the exact FunctionGemma prompt for a request (no trailing newline added)");
  cmd->add_option("--request", a->request,
                  "JSON file: {tools, messages, add_generation_prompt?} or an OpenAI chat-completions body")
      ->required();
  cmd->add_flag("--no-generation-prompt", a->no_generation_prompt, "omit the trailing '<start_of_turn>model\\n'");
  cmd->add_option("--model", a->model, "model path: use its chat template (tokenizer_config.json or GGUF metadata)");
  cmd->add_option("--chat-template", a->chat_template,
                  "check a chat template (.jinja, or tokenizer_config.json) and render as it would");
  cmd->add_option("--bos", a->bos, "text of the BOS token (default '<bos>'; '' when the tokenizer adds it)");
  cmd->add_flag("--ids", a->ids, "print the prompt's token ids (a JSON array) instead of its text; needs --model or --tokenizer");
  cmd->add_option("--tokenizer", a->tokenizer, "tokenizer.json or directory for --ids (default: the model's)");
  cmd->add_flag("--trust-content-tokens", a->trust_content_tokens,
                "with --ids: encode the prompt as one string with control tokens recognised anywhere, as Hugging "
                "Face does (default: off, control tokens only where the template writes them)");
  cmd->add_flag("--raw", a->raw, "render tools/messages as given, without validating the request");
  return [a] { return RunRender(*a); };
});

}  // namespace
}  // namespace fgemma::cli
