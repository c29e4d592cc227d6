// fgemma generate: greedy continuation of a text prompt (streamed as decoded text), of a chat turn
// rendered through the chat template, or of an id sequence (printed as ids).
#include <cstdio>
#include <optional>

#include "chat/render.h"
#include "chat/request.h"
#include "command.h"
#include "util/json.h"
#include "number_options.h"
#include "lora_option.h"
#include "runtime/loaded_model.h"
#include "runtime/prompt_tokens.h"
#include "runtime/session.h"
#include "util/ids.h"
#include "util/process_stats.h"

namespace fgemma::cli {
namespace {

struct GenerateArgs {
  std::string model, lora, ids, prompt, tokenizer;
  size_t max_new = 32;
  size_t context = 0;
  int threads = 0;
  bool chat = false;
  bool ids_as_text = false;
  bool stop_at_eos = false;
  bool stats = false;
};

// The prompt's ids: --ids as given; --prompt as text after <bos>; --prompt --chat as one user turn
// rendered by the official template (the model's own when fgemma renders it exactly), control
// tokens only where the template wrote them.
Result<std::vector<int32_t>> PromptIds(const GenerateArgs& a, const Tokenizer* tokenizer) {
  if (!a.ids.empty()) return ReadIdsFile(a.ids);
  if (!a.chat) {
    std::vector<int32_t> ids = tokenizer->Encode(a.prompt, EncodeOptions{.add_bos = true, .parse_special = false});
    return ids;
  }
  OrderedJson body = {{"messages", OrderedJson::array({{{"role", "user"}, {"content", a.prompt}}})}};
  FGEMMA_TRY(ChatRequest request, ParseChatRequest(body, RequestFormat::kTemplateInput));
  RenderOptions options;
  if (auto t = LoadTemplateFor(a.model); t.ok()) {
    options.template_kind = t->kind;
  } else {
    std::fprintf(stderr, "fgemma: note: %s; the turn is rendered with FunctionGemma's official template\n",
                 t.status().ToString().c_str());
  }
  FGEMMA_TRY(PromptParts parts, RenderPromptParts(request, options));
  std::vector<PromptOut::Span> controls = parts.prefix_controls;
  for (PromptOut::Span c : parts.remainder_controls) controls.push_back({c.offset + parts.prefix.size(), c.length});
  return EncodePromptText(*tokenizer, parts.prefix + parts.remainder, controls, false);
}

int RunGenerate(const GenerateArgs& a) {
  if (a.ids.empty() == a.prompt.empty()) return Fail("generate: give either --prompt TEXT or --ids FILE");
  if (a.chat && a.prompt.empty()) return Fail("generate: --chat needs --prompt");
  // --ids keeps its old output (a JSON array of new ids) unless --text asks for text.
  const bool text_out = a.ids.empty() || a.ids_as_text;
  std::optional<Tokenizer> tokenizer;
  if (text_out || !a.prompt.empty()) {
    auto t = LoadTokenizerFor(a.model, a.tokenizer);
    if (!t.ok()) return Fail(t.status().ToString());
    tokenizer.emplace(std::move(t).value());
  }
  auto ids = PromptIds(a, tokenizer ? &*tokenizer : nullptr);
  if (!ids.ok()) return Fail(ids.status().ToString());
  auto model = Model::Load(a.model);
  if (!model.ok()) return Fail(model.status().ToString());
  std::shared_ptr<const Model> m(std::move(model).value());
  if (tokenizer && tokenizer->vocab_size() != m->config().vocab_size)
    return Fail(a.model + ": the tokenizer has " + std::to_string(tokenizer->vocab_size()) + " tokens but the model " +
                std::to_string(m->config().vocab_size));
  SessionOptions so;
  so.threads = a.threads;
  auto lora = LoraAdapter::LoadFor(a.lora, *m);
  if (!lora.ok()) return Fail(lora.status().ToString());
  so.lora = std::move(lora).value();
  so.context = a.context ? a.context
                         : std::min<size_t>(static_cast<size_t>(m->config().max_position_embeddings), ids->size() + a.max_new);
  auto session = Session::Create(m, so);
  if (!session.ok()) return Fail(session.status().ToString());
  std::vector<int32_t> out;
  out.reserve(a.max_new);
  // Special tokens (<end_of_turn>, <eos>) end a turn; they are not text to show.
  std::optional<StreamDecoder> decoder;
  if (text_out) decoder.emplace(*tokenizer, DecodeOptions{.skip_special = true});
  Status decode_error = Status::Ok();
  const double start = NowSeconds();
  Status st = session.value()->Generate(*ids, a.max_new, a.stop_at_eos || a.chat, [&](int32_t t) {
    out.push_back(t);
    if (decoder) {
      auto piece = decoder->Push(t);
      if (!piece.ok()) {
        decode_error = piece.status();
        return false;
      }
      std::fwrite(piece->data(), 1, piece->size(), stdout);
      std::fflush(stdout);
    }
    return true;
  });
  if (!st.ok()) return Fail(st.ToString());
  if (!decode_error.ok()) return Fail(decode_error.ToString());
  if (decoder) {
    const std::string rest = decoder->Finish();
    std::printf("%s\n", rest.c_str());
  }
  if (a.stats) {
    const double s = NowSeconds() - start;
    std::fprintf(stderr, "generated %zu tokens after a %zu-token prompt in %.2f s (%.1f tok/s overall); peak RSS %.1f MiB\n",
                 out.size(), ids->size(), s, static_cast<double>(out.size()) / s,
                 static_cast<double>(PeakRssBytes()) / (1024.0 * 1024.0));
  }
  if (!text_out) {
    std::printf("%s\n", Json(out).dump().c_str());
  }
  return 0;
}

const CommandRegistration kGenerate(30, [](CLI::App& app) -> std::function<int()> {
  auto a = std::make_shared<GenerateArgs>();
  auto* cmd = app.add_subcommand(
      "generate", "Greedy continuation: streams the decoded text of --prompt (or a --chat turn); --ids prints new ids");
  cmd->add_option("--model", a->model, "model directory, .safetensors or .gguf")->required();
  AddLoraOption(cmd, &a->lora);
  cmd->add_option("--prompt", a->prompt, "prompt text (encoded after <bos>); the continuation is printed as text");
  cmd->add_flag("--chat", a->chat, "with --prompt: one user turn through the chat template, answered until <end_of_turn>");
  cmd->add_option("--ids", a->ids, "file of prompt token ids (whitespace-separated or JSON array); prints new ids as a JSON array");
  cmd->add_flag("--text", a->ids_as_text, "with --ids: print the continuation as text instead");
  cmd->add_option("--tokenizer", a->tokenizer, "tokenizer.json to use instead of the model's own vocabulary");
  cmd->add_option("--max-new", a->max_new, "tokens to generate (default 32)");
  cmd->add_option("--context", a->context, "context length (default: prompt + max-new)");
  AddThreadsOption(cmd, &a->threads, "threads (default: all cores)");
  cmd->add_flag("--stop-at-eos", a->stop_at_eos, "stop after an end-of-sequence / end-of-turn token (always with --chat)");
  cmd->add_flag("--stats", a->stats, "print time, tokens/s and peak RSS to stderr");
  return [a] { return RunGenerate(*a); };
});

}  // namespace
}  // namespace fgemma::cli
