// FunctionGemma end to end: a request (tools + messages) in, validated calls out.
//
// The rendered prompt is split where it stops depending on the conversation: BOS plus the developer
// turn with every declaration (the catalog prefix) is prefilled once per distinct catalog and kept
// (in memory, optionally in a cache file); each request restores that state and prefills only its
// own turn, then decodes under the grammar compiled from the declared tools.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "chat/call_grammar.h"
#include "chat/parse_call.h"
#include "chat/render.h"
#include "runtime/call_generator.h"
#include "runtime/call_request.h"
#include "runtime/loaded_model.h"
#include "runtime/session.h"
#include "runtime/token_constraint.h"
#include "tokenizer/tokenizer.h"

namespace fgemma {

struct FunctionCallerOptions {
  int threads = 0;                 // 0: all cores (or the pool's count)
  // Runs both of the caller's sessions (catalog and work); null: SharedThreadPool(threads).
  std::shared_ptr<ThreadPool> pool;
  // Shares forward passes with other callers decoding at the same time (batched serving,
  // runtime/pass_batcher.h); its pool replaces `pool`. Answers are unchanged.
  std::shared_ptr<PassBatcher> batcher;
  size_t context = 4096;           // positions per session
  std::string cache_path;          // catalog cache file ("" = memory only)
  // A directory of catalog cache files, one a catalog (catalog-<hash>.fgcache): for a caller that
  // meets many catalogs (eval), so each is restored by a later run instead of prefilled again.
  // Created if missing; not with cache_path.
  std::string cache_dir;
  GrammarLimits limits;
  // max_tokens is the default cap (a request's limits.max_tokens replaces it); on_token is set by
  // Call for each request (CallRequest::on_token).
  ConstrainedOptions decoding;
  // The plain Hugging Face tokenization of the prompt: control-token text inside client content
  // (messages, tool names, descriptions, enum values, arguments) becomes control tokens. Off: only
  // the template writes control tokens (see EncodePromptText in chat/render.h).
  bool trust_content_tokens = false;
  // Prompt reuse: a request whose turn starts with the same tokens as the previous request's (the
  // template's "<start_of_turn>user\n", a repeated command) keeps those positions from it instead
  // of evaluating them again, and the catalog state comes back by repairing the sliding rings
  // instead of copying it whole. The same bits either way; off: every request restores the whole
  // catalog state and evaluates its whole turn (for comparisons).
  bool reuse_prompt = true;
  // A LoRA adapter both sessions run with (null = the base alone); the catalog state, in memory
  // and in the cache file, is bound to it.
  std::shared_ptr<const LoraAdapter> lora;
};

struct CallTiming {
  double render_ms = 0, tokenize_ms = 0;
  double prefix_ms = 0;            // prefilling (or restoring) the catalog prefix
  double prefill_ms = 0, decode_ms = 0, total_ms = 0;
  size_t prefix_tokens = 0, prompt_tokens = 0, generated_tokens = 0;
  size_t evaluated_tokens = 0;     // tokens the model processed for this call (prefix included if built)
  size_t reused_tokens = 0;        // prompt tokens kept from the previous request (reuse_prompt)
  bool cache_hit = false;          // prefix state came from memory or the cache file
  std::string cache_source;        // "memory", "file", "built", "built (file rejected: ...)"
};

struct CallOutcome {
  ParsedOutput parsed;             // calls, text, raw output, status
  // Stopped early (length, cancelled, deadline): `parsed` and `output_tokens` hold what was
  // generated until then, and parsed.status says why it is incomplete.
  FinishReason finish_reason = FinishReason::kStop;
  CallTiming timing;
  ConstrainedStats stats;
  std::vector<int32_t> output_tokens;
  std::vector<int32_t> prompt_tokens;  // the whole prompt's ids: catalog prefix then remainder
};

class FunctionCaller {
 public:
  // The model, tokenizer and template of `loaded` (checked when it was made; shared, not copied).
  static Result<std::unique_ptr<FunctionCaller>> Create(const LoadedModel& loaded, const FunctionCallerOptions& options);

  // Runs one request under its limits. A call stopped by a limit is not an error: the outcome says
  // so in finish_reason. Errors are invalid requests (render, tool_choice), a prompt too long for
  // the context, and model failures.
  Result<CallOutcome> Call(const CallRequest& request);
  // Warnings produced so far (rejected cache files, ...), cleared on read.
  std::vector<std::string> TakeWarnings();

  const Tokenizer& tokenizer() const { return tokenizer_; }
  const ConstraintVocab& constraint_vocab() const { return *vocab_; }
  // Installs a hook that sees and may override each choice (timing aids, tests; null = none).
  void set_choice_hook(ChoiceHook* hook) { options_.decoding.choice_hook = hook; }
  const Model& model() const { return *model_; }
  // The one thread pool of both sessions (shared with other callers of the same thread count).
  const ThreadPool& pool() const { return catalog_->pool(); }
  const FunctionCallerOptions& options() const { return options_; }

 private:
  FunctionCaller(const LoadedModel& loaded, const FunctionCallerOptions& options)
      : model_(loaded.model), tokenizer_(loaded.tokenizer), template_kind_(loaded.chat_template.kind), options_(options) {}
  // Makes work_ hold the state after `prefix` (restoring the catalog state or building it) and as
  // many of the first tokens of `remainder` as it can keep from the previous request (at most all
  // but the last, whose logits the call needs): their count is timing->reused_tokens.
  Status PreparePrefix(const std::vector<int32_t>& prefix, std::span<const int32_t> remainder, CallTiming* timing);
  // The cache file of the catalog whose prefix hashes to `hash`: cache_path, or its file in
  // cache_dir ("" = none, or a file there that may not be replaced: a warning says so).
  std::string CacheFileFor(uint64_t hash);
  // Compiles the grammar of the request's tools and tool_choice unless it is the last one's.
  Status PrepareGrammar(const CallRequest& call);
  // The prompt's ids: the catalog prefix into prefix_ids_ (kept while it renders the same), the
  // rest returned; both into out->prompt_tokens. Refuses an empty turn and a prompt that leaves no
  // room to answer.
  Result<std::vector<int32_t>> EncodePrompt(PromptParts& parts, CallOutcome* out);
  // The texts drafts may copy from: earlier outputs, then the conversation's last messages.
  void SetDraftSources(const ChatRequest& request, ConstrainedOptions* decoding);
  // Puts a complete turn's text at the front of the draft history.
  void RememberOutput(const std::vector<int32_t>& output);

  std::shared_ptr<const Model> model_;
  Tokenizer tokenizer_;
  TemplateKind template_kind_;
  FunctionCallerOptions options_;
  std::unique_ptr<ConstraintVocab> vocab_;
  std::unique_ptr<Session> catalog_;   // holds the prefilled prefix
  std::unique_ptr<Session> work_;      // per request
  uint64_t catalog_hash_ = 0;
  bool catalog_valid_ = false;
  // Counts the catalog states catalog_ has held; work_ derives from state work_generation_ (0:
  // none) and holds the tokens work_prompt_ right after that state's prefix.
  uint64_t catalog_generation_ = 0, work_generation_ = 0;
  std::vector<int32_t> work_prompt_;
  // The last catalog prefix's text and ids: a warm request with the same tools skips re-encoding it.
  std::string prefix_text_;
  std::vector<int32_t> prefix_ids_;
  std::vector<PromptOut::Span> prefix_controls_;
  // The last request's compiled grammar (tools and tool_choice) and the allowed-token lists of its
  // structural states, reused while requests keep the same catalog and choice.
  std::string grammar_key_;
  std::unique_ptr<CallGrammar> grammar_;
  AllowedCache allowed_cache_;
  // Draft sources (ConstrainedOptions::draft_sources): the caller's last outputs on any catalog,
  // most recent first; then the last output of each kind (a function's calls, text answers) the
  // recent ones no longer hold, most recent kind first (a refusal written 20 calls ago still drafts
  // the next refusal); then per request the conversation's last messages.
  static constexpr size_t kDraftHistory = 8, kDraftKinds = 16;
  std::vector<std::string> draft_history_;
  std::vector<std::pair<std::string, std::string>> draft_kinds_;  // (kind, output)
  std::vector<std::string> draft_sources_;
  std::vector<std::string> warnings_;
};

// Builds the output object of `fgemma call` and the C API:
// {"calls":[{"name":...,"arguments":{...}}],"text":...,"timing":{...},"error":...}
Json CallOutcomeToJson(const CallOutcome& outcome);

}  // namespace fgemma
