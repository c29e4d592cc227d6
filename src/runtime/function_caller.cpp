#include "runtime/function_caller.h"

#include "runtime/catalog_cache.h"
#include "util/mapped_file.h"
#include "util/process_stats.h"

namespace fgemma {

Result<std::unique_ptr<FunctionCaller>> FunctionCaller::Create(std::shared_ptr<const Model> model, Tokenizer tokenizer,
                                                               const FunctionCallerOptions& options) {
  if (tokenizer.vocab_size() != model->config().vocab_size)
    return InvalidArgument("tokenizer has " + std::to_string(tokenizer.vocab_size()) + " tokens but the model's vocabulary is " +
                           std::to_string(model->config().vocab_size));
  auto fc = std::unique_ptr<FunctionCaller>(new FunctionCaller(std::move(model), std::move(tokenizer), options));
  FGEMMA_TRY(ConstraintVocab vocab, ConstraintVocab::Build(fc->tokenizer_));
  fc->vocab_ = std::make_unique<ConstraintVocab>(std::move(vocab));
  // One pool for both sessions: they never run at once, and a second pool would only add threads
  // competing for the same cores.
  SessionOptions so;
  so.threads = options.threads;
  so.context = options.context;
  so.pool = options.pool ? options.pool : SharedThreadPool(options.threads);
  FGEMMA_TRY(fc->catalog_, Session::Create(fc->model_, so));
  FGEMMA_TRY(fc->work_, Session::Create(fc->model_, so));
  return fc;
}

std::vector<std::string> FunctionCaller::TakeWarnings() { return std::exchange(warnings_, {}); }

Status FunctionCaller::PreparePrefix(const std::vector<int32_t>& prefix, CallTiming* timing) {
  const double t0 = NowSeconds();
  const uint64_t hash = PrefixHash(prefix);
  timing->prefix_tokens = prefix.size();
  if (catalog_valid_ && catalog_hash_ == hash) {
    timing->cache_hit = true;
    timing->cache_source = "memory";
  } else {
    catalog_valid_ = false;
    catalog_->Reset();
    std::string rejected;
    if (!options_.cache_path.empty() && FileExists(options_.cache_path)) {
      Status st = LoadCatalogCache(options_.cache_path, *catalog_, hash, prefix.size());
      if (st.ok()) {
        timing->cache_hit = true;
        timing->cache_source = "file";
      } else {
        catalog_->Reset();
        rejected = st.message();
        warnings_.push_back("catalog cache rejected, rebuilding: " + st.message());
      }
    }
    if (!timing->cache_hit) {
      FGEMMA_RETURN_IF_ERROR(catalog_->Evaluate(prefix));
      timing->evaluated_tokens += prefix.size();
      timing->cache_source = rejected.empty() ? "built" : "built (file rejected: " + rejected + ")";
      if (!options_.cache_path.empty()) {
        Status st = SaveCatalogCache(options_.cache_path, *catalog_, hash);
        if (!st.ok()) warnings_.push_back("could not write catalog cache: " + st.message());
      }
    }
    catalog_hash_ = hash;
    catalog_valid_ = true;
  }
  FGEMMA_RETURN_IF_ERROR(work_->CopyStateFrom(*catalog_));
  timing->prefix_ms = (NowSeconds() - t0) * 1000;
  return Status::Ok();
}

Result<CallOutcome> FunctionCaller::Call(const ChatRequest& request, const ToolChoice& choice,
                                         const std::function<bool(int32_t)>& on_token) {
  CallOutcome out;
  CallTiming& t = out.timing;
  const double start = NowSeconds();
  RenderOptions ro;
  ro.template_kind = options_.template_kind;
  FGEMMA_TRY(PromptParts parts, RenderPromptParts(request, ro));
  std::string grammar_key = request.tools_json.dump();
  grammar_key += '\x1f';
  grammar_key += std::to_string(static_cast<int>(choice.mode)) + choice.function;
  if (grammar_ == nullptr || grammar_key != grammar_key_) {
    FGEMMA_TRY(CallGrammar compiled, CallGrammar::Compile(request.tools, choice, options_.limits));
    grammar_ = std::make_unique<CallGrammar>(std::move(compiled));
    grammar_key_ = std::move(grammar_key);
    allowed_cache_.sets.clear();
    allowed_cache_.masks = 0;
  }
  const CallGrammar& grammar = *grammar_;
  t.render_ms = (NowSeconds() - start) * 1000;

  double t0 = NowSeconds();
  if (parts.prefix != prefix_text_) {
    prefix_ids_ = tokenizer_.Encode(parts.prefix);
    prefix_text_ = std::move(parts.prefix);
  }
  const std::vector<int32_t>& prefix = prefix_ids_;
  const std::vector<int32_t> remainder = tokenizer_.Encode(parts.remainder);
  t.tokenize_ms = (NowSeconds() - t0) * 1000;
  if (remainder.empty()) return InvalidArgument("request renders no prompt after the catalog (no messages?)");
  // Leave room for at least a short answer; a longer one that runs out of context fails clearly.
  constexpr size_t kMinAnswerRoom = 64;
  if (prefix.size() + remainder.size() + kMinAnswerRoom > options_.context)
    return OutOfRange("prompt of " + std::to_string(prefix.size() + remainder.size()) + " tokens leaves no room to answer in a context of " +
                      std::to_string(options_.context) + " tokens");

  FGEMMA_RETURN_IF_ERROR(PreparePrefix(prefix, &t));
  t.prompt_tokens = remainder.size();

  t0 = NowSeconds();
  CallGenerator gen(*vocab_, grammar, model_->config().vocab_size, &allowed_cache_);
  ConstrainedOptions decoding = options_.decoding;
  if (on_token) decoding.on_token = on_token;
  const size_t position_before = work_->position();
  FGEMMA_RETURN_IF_ERROR(gen.Generate(*work_, remainder, decoding, &out.output_tokens, &out.stats));
  t.evaluated_tokens += work_->position() - position_before;
  t.decode_ms = (NowSeconds() - t0) * 1000;
  t.generated_tokens = out.output_tokens.size();
  FGEMMA_TRY(std::string text, tokenizer_.Decode(out.output_tokens));
  out.parsed = ParseModelOutput(text, request.tools);
  if (!gen.finished() && out.parsed.status.ok())
    out.parsed.status = OutOfRange("generation stopped at the token limit before the turn ended");
  t.total_ms = (NowSeconds() - start) * 1000;
  return out;
}

Json CallOutcomeToJson(const CallOutcome& o) {
  Json calls = Json::array();
  for (const auto& c : o.parsed.calls) {
    Json call = {{"name", c.name}, {"arguments", c.arguments}};
    if (!c.errors.empty()) call["errors"] = c.errors;
    calls.push_back(std::move(call));
  }
  const CallTiming& t = o.timing;
  Json j = {{"calls", calls},
            {"text", o.parsed.text.empty() ? Json(nullptr) : Json(o.parsed.text)},
            {"timing",
             {{"total_ms", t.total_ms},
              {"prefix_ms", t.prefix_ms},
              {"decode_ms", t.decode_ms},
              {"prefix_tokens", t.prefix_tokens},
              {"prompt_tokens", t.prompt_tokens},
              {"generated_tokens", t.generated_tokens},
              {"evaluated_tokens", t.evaluated_tokens},
              {"cache", t.cache_source},
              {"head_steps", o.stats.head_steps},
              {"restricted_head_steps", o.stats.restricted_steps},
              {"jump_forward_tokens", o.stats.forced_tokens}}}};
  if (!o.parsed.ok()) {
    j["error"] = o.parsed.ErrorSummary();
    j["raw"] = o.parsed.raw;
  }
  return j;
}

}  // namespace fgemma
