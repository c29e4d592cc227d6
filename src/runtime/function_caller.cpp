#include "runtime/function_caller.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "chat/call_format.h"
#include "runtime/catalog_cache.h"
#include "runtime/free_decode.h"
#include "runtime/prompt_tokens.h"
#include "util/file_replace.h"
#include "util/mapped_file.h"
#include "util/process_stats.h"
#include "util/run_limits.h"

namespace fgemma {

const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kToolCalls: return "tool_calls";
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kDeadline: return "deadline";
  }
  return "unknown";
}

Result<std::unique_ptr<FunctionCaller>> FunctionCaller::Create(const LoadedModel& loaded, const FunctionCallerOptions& options) {
  // Refused up front: a cache path that is a device, FIFO, directory or symlink would otherwise be
  // opened for reading (a FIFO blocks) and replaced by a regular file when the cache is written.
  if (!options.cache_path.empty()) FGEMMA_RETURN_IF_ERROR(CheckReplaceableFile(options.cache_path).WithContext("catalog cache"));
  if (!options.cache_dir.empty()) {
    if (!options.cache_path.empty()) return InvalidArgument("catalog cache: a file and a directory given; use one");
    std::error_code ec;
    std::filesystem::create_directory(options.cache_dir, ec);
    if (!std::filesystem::is_directory(options.cache_dir))
      return IoError("catalog cache directory " + options.cache_dir + ": " + (ec ? ec.message() : "not a directory"));
  }
  FGEMMA_RETURN_IF_ERROR(CheckThreadCount(options.threads, "threads"));
  // 0 would be a context no prompt fits: every call refused. The model's maximum is checked below.
  if (options.context == 0) return InvalidArgument("context: 0 positions (at least 1, at most the model's max_position_embeddings)");
  auto fc = std::unique_ptr<FunctionCaller>(new FunctionCaller(loaded, options));
  FGEMMA_TRY(ConstraintVocab vocab, ConstraintVocab::Build(fc->tokenizer_));
  fc->vocab_ = std::make_unique<ConstraintVocab>(std::move(vocab));
  // One pool for both sessions: they never run at once, and a second pool would only add threads
  // competing for the same cores.
  SessionOptions so;
  so.threads = options.threads;
  so.context = options.context;
  so.pool = options.batcher ? options.batcher->pool() : options.pool ? options.pool : SharedThreadPool(options.threads);
  so.batcher = options.batcher;
  so.lora = options.lora;
  FGEMMA_TRY(fc->catalog_, Session::Create(fc->model_, so));
  FGEMMA_TRY(fc->work_, Session::Create(fc->model_, so));
  return fc;
}

std::vector<std::string> FunctionCaller::TakeWarnings() { return std::exchange(warnings_, {}); }

std::string FunctionCaller::CacheFileFor(uint64_t hash) {
  if (options_.cache_dir.empty()) return options_.cache_path;
  char name[40];
  std::snprintf(name, sizeof(name), "catalog-%016llx.fgcache", static_cast<unsigned long long>(hash));
  std::string path = options_.cache_dir + "/" + name;
  // The same refusal as for cache_path at Create (a FIFO or symlink planted in the directory).
  if (Status st = CheckReplaceableFile(path); !st.ok()) {
    warnings_.push_back("catalog cache file skipped: " + st.message());
    return "";
  }
  return path;
}

Status FunctionCaller::PreparePrefix(const std::vector<int32_t>& prefix, std::span<const int32_t> remainder,
                                     CallTiming* timing) {
  const double t0 = NowSeconds();
  const uint64_t hash = PrefixHash(prefix);
  timing->prefix_tokens = prefix.size();
  if (catalog_valid_ && catalog_hash_ == hash) {
    timing->cache_hit = true;
    timing->cache_source = "memory";
  } else {
    catalog_valid_ = false;
    ++catalog_generation_;  // whatever happens below, work_ no longer derives from catalog_
    catalog_->Reset();
    std::string rejected;
    const std::string cache = CacheFileFor(hash);
    if (!cache.empty() && FileExists(cache)) {
      Status st = LoadCatalogCache(cache, *catalog_, hash, prefix.size());
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
      if (!cache.empty()) {
        Status st = SaveCatalogCache(cache, *catalog_, hash);
        if (!st.ok()) warnings_.push_back("could not write catalog cache: " + st.message());
      }
    }
    catalog_hash_ = hash;
    catalog_valid_ = true;
  }
  // work_ holds this catalog's state and the previous request's tokens after it: keep the positions
  // this request shares with them, repair the rings (a few rows per position taken back) instead of
  // copying the whole state.
  size_t keep = 0;
  bool rolled_back = false;
  if (options_.reuse_prompt && work_generation_ == catalog_generation_) {
    const size_t limit = std::min(work_prompt_.size(), remainder.empty() ? 0 : remainder.size() - 1);
    while (keep < limit && work_prompt_[keep] == remainder[keep]) ++keep;
    rolled_back = work_->RollBackTo(prefix.size() + keep, *catalog_).ok();
  }
  if (!rolled_back) {
    keep = 0;
    work_generation_ = 0;
    FGEMMA_RETURN_IF_ERROR(work_->CopyStateFrom(*catalog_));
  }
  work_generation_ = catalog_generation_;
  work_prompt_.resize(keep);
  timing->reused_tokens = keep;
  timing->prefix_ms = (NowSeconds() - t0) * 1000;
  return Status::Ok();
}

namespace {

// Why `limits` stop the call now, if they do.
std::optional<FinishReason> LimitReached(const CallLimits& limits) {
  if (limits.cancel != nullptr && limits.cancel->load()) return FinishReason::kCancelled;
  if (limits.deadline && std::chrono::steady_clock::now() > *limits.deadline) return FinishReason::kDeadline;
  return std::nullopt;
}

}  // namespace

Status FunctionCaller::PrepareGrammar(const CallRequest& call) {
  std::string grammar_key = call.chat.tools_json.dump();
  grammar_key += '\x1f';
  grammar_key += std::to_string(static_cast<int>(call.tool_choice.mode)) + call.tool_choice.function;
  if (grammar_ != nullptr && grammar_key == grammar_key_) return Status::Ok();
  FGEMMA_TRY(CallGrammar compiled, CallGrammar::Compile(call.chat.tools, call.tool_choice, options_.limits));
  grammar_ = std::make_unique<CallGrammar>(std::move(compiled));
  grammar_key_ = std::move(grammar_key);
  allowed_cache_.sets.clear();
  allowed_cache_.masks = 0;
  // The draft history stays: an app's catalogs (a screen's subset of its tools, say) share most of
  // their answers (the cartridge's refusal text, a call's keys and formats), and every guess is
  // verified, so another catalog's output costs at most a few guessed positions. Cleared with the
  // catalog, each switch made the next answers' first occurrence cost a pass a token again.
  return Status::Ok();
}

Result<std::vector<int32_t>> FunctionCaller::EncodePrompt(PromptParts& parts, CallOutcome* out) {
  // Text and control positions key the cached ids: a description holding "<escape>" can render the
  // same text as another catalog whose template wrote that "<escape>".
  const bool trust = options_.trust_content_tokens;
  if (parts.prefix != prefix_text_ || parts.prefix_controls != prefix_controls_) {
    prefix_ids_ = EncodePromptText(tokenizer_, parts.prefix, parts.prefix_controls, trust);
    prefix_text_ = std::move(parts.prefix);
    prefix_controls_ = std::move(parts.prefix_controls);
  }
  std::vector<int32_t> remainder = EncodePromptText(tokenizer_, parts.remainder, parts.remainder_controls, trust);
  out->prompt_tokens.reserve(prefix_ids_.size() + remainder.size());
  out->prompt_tokens.assign(prefix_ids_.begin(), prefix_ids_.end());
  out->prompt_tokens.insert(out->prompt_tokens.end(), remainder.begin(), remainder.end());
  if (remainder.empty()) return InvalidArgument("request renders no prompt after the catalog (no messages?)");
  // Leave room for at least a short answer; a longer one that runs out of context fails clearly.
  constexpr size_t kMinAnswerRoom = 64;
  if (prefix_ids_.size() + remainder.size() + kMinAnswerRoom > options_.context)
    return OutOfRange("prompt of " + std::to_string(prefix_ids_.size() + remainder.size()) +
                      " tokens leaves no room to answer in a context of " + std::to_string(options_.context) + " tokens");
  return remainder;
}

void FunctionCaller::SetDraftSources(const ChatRequest& request, ConstrainedOptions* decoding) {
  // Drafts come from earlier outputs (the last few, then the last of each kind the last few no
  // longer hold), then the conversation's last messages (their last bytes: the lookup is linear in
  // the sources and a message may be long).
  constexpr size_t kSourceMessages = 4, kSourceBytes = 4096;
  draft_sources_.assign(draft_history_.begin(), draft_history_.end());
  for (const auto& [kind, text] : draft_kinds_) {
    if (std::find(draft_history_.begin(), draft_history_.end(), text) == draft_history_.end()) draft_sources_.push_back(text);
  }
  decoding->draft_anchored = draft_sources_.size();
  for (size_t i = request.messages.size(), n = 0; i-- > 0 && n < kSourceMessages;) {
    const std::string& text = request.messages[i].text;
    if (text.empty()) continue;
    draft_sources_.push_back(text.size() > kSourceBytes ? text.substr(text.size() - kSourceBytes) : text);
    ++n;
  }
  decoding->draft_sources = draft_sources_;
}

namespace {
// What an output is, for keeping one of each: the first call's function name, or "" for text.
std::string_view OutputKind(std::string_view written) {
  constexpr std::string_view kCall = "call:";
  if (!written.starts_with(kStartFunctionCall) || !written.substr(kStartFunctionCall.size()).starts_with(kCall)) return {};
  const std::string_view rest = written.substr(kStartFunctionCall.size() + kCall.size());
  return rest.substr(0, rest.find('{'));
}
}  // namespace

void FunctionCaller::RememberOutput(const std::vector<int32_t>& output) {
  // Once: a repeat moves to the front.
  std::string written;
  for (int32_t id : output) written += vocab_->TokenText(id);
  const std::string kind(OutputKind(written));
  auto same_kind = std::find_if(draft_kinds_.begin(), draft_kinds_.end(), [&](const auto& k) { return k.first == kind; });
  if (same_kind != draft_kinds_.end()) draft_kinds_.erase(same_kind);
  draft_kinds_.insert(draft_kinds_.begin(), {kind, written});
  if (draft_kinds_.size() > kDraftKinds) draft_kinds_.pop_back();
  auto same = std::find(draft_history_.begin(), draft_history_.end(), written);
  if (same != draft_history_.end()) draft_history_.erase(same);
  draft_history_.insert(draft_history_.begin(), std::move(written));
  if (draft_history_.size() > kDraftHistory) draft_history_.pop_back();
}

Result<CallOutcome> FunctionCaller::Call(const CallRequest& call) {
  const ChatRequest& request = call.chat;
  CallOutcome out;
  CallTiming& t = out.timing;
  const double start = NowSeconds();
  // 1. Limits that refuse or stop the call before any work: a token limit no context can hold is
  // the caller's mistake; a cancel or a deadline that came before the call stops it.
  if (call.limits.max_tokens > options_.context)
    return OutOfRange("max_tokens: " + std::to_string(call.limits.max_tokens) + " exceeds the context of " +
                      std::to_string(options_.context) + " tokens");
  if (auto stop = LimitReached(call.limits)) {
    out.finish_reason = *stop;
    out.parsed.status = Status(ErrorCode::kCancelled, std::string("call stopped before it started: ") + FinishReasonName(*stop));
    return out;
  }
  // 2. The prompt in two parts (catalog prefix, the rest) and the grammar of the tools and
  // tool_choice (free decoding needs none, and keeps the last one for later requests).
  RenderOptions ro;
  ro.template_kind = template_kind_;
  FGEMMA_TRY(PromptParts parts, RenderPromptParts(request, ro));
  if (!call.unconstrained) FGEMMA_RETURN_IF_ERROR(PrepareGrammar(call));
  t.render_ms = (NowSeconds() - start) * 1000;
  double t0 = NowSeconds();
  FGEMMA_TRY(const std::vector<int32_t> remainder, EncodePrompt(parts, &out));
  t.tokenize_ms = (NowSeconds() - t0) * 1000;

  // 3. The catalog state (restored or built) and what the previous request's turn lets us keep.
  FGEMMA_RETURN_IF_ERROR(PreparePrefix(prefix_ids_, remainder, &t));
  t.prompt_tokens = remainder.size();
  const std::span<const int32_t> to_evaluate = std::span<const int32_t>(remainder).subspan(t.reused_tokens);

  // 4. Decoding: the token limit is the generator's own cap (it stops there, jump-forward runs
  // included); the other limits are checked at each token, before the request's callback sees it.
  t0 = NowSeconds();
  ConstrainedOptions decoding = options_.decoding;
  if (call.limits.max_tokens > 0) decoding.max_tokens = call.limits.max_tokens;
  std::optional<FinishReason> stopped;
  size_t accepted = 0;  // tokens let through (the generator has already appended the one refused)
  decoding.on_token = [&](int32_t id) {
    stopped = LimitReached(call.limits);
    if (!stopped && call.on_token && !call.on_token(id)) stopped = FinishReason::kCancelled;
    if (stopped) return false;
    ++accepted;
    return true;
  };
  SetDraftSources(request, &decoding);
  const size_t position_before = work_->position();
  // Batched serving: while decoding, this caller's passes are awaited by the others' leaders.
  std::optional<PassBatcher::Participation> batched;
  if (options_.batcher) batched.emplace(options_.batcher.get());
  bool finished = false;
  Status generated;
  if (call.unconstrained) {
    generated = DecodeFree(*work_, *vocab_, to_evaluate, decoding, &out.output_tokens, &out.stats, &finished);
  } else {
    CallGenerator gen(*vocab_, *grammar_, model_->config().vocab_size, &allowed_cache_);
    generated = gen.Generate(*work_, to_evaluate, decoding, &out.output_tokens, &out.stats);
    finished = gen.finished();
  }
  batched.reset();
  // The positions after the prefix hold the turn's tokens as far as they were evaluated (an error
  // leaves the position where it was).
  const size_t evaluated_turn = std::min(work_->position() - prefix_ids_.size(), remainder.size());
  work_prompt_.assign(remainder.begin(), remainder.begin() + static_cast<std::ptrdiff_t>(evaluated_turn));
  if (!generated.ok() && !(stopped && generated.code() == ErrorCode::kCancelled)) return generated;
  if (stopped) out.output_tokens.resize(accepted);
  t.evaluated_tokens += work_->position() - position_before;
  t.decode_ms = (NowSeconds() - t0) * 1000;
  t.generated_tokens = out.output_tokens.size();

  // 5. The output parsed against the tools, and why it ended.
  FGEMMA_TRY(std::string text, tokenizer_.Decode(out.output_tokens));
  out.parsed = ParseModelOutput(text, request.tools);
  if (stopped) {
    out.finish_reason = *stopped;
    if (out.parsed.status.ok())
      out.parsed.status = Status(ErrorCode::kCancelled, std::string("generation stopped before the turn ended: ") + FinishReasonName(*stopped));
  } else if (!finished) {
    out.finish_reason = FinishReason::kLength;
    if (out.parsed.status.ok()) out.parsed.status = OutOfRange("generation stopped at the token limit before the turn ended");
  } else {
    out.finish_reason = out.parsed.calls.empty() ? FinishReason::kStop : FinishReason::kToolCalls;
    RememberOutput(out.output_tokens);  // a complete turn joins the draft history
  }
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
            {"finish_reason", FinishReasonName(o.finish_reason)},
            {"timing",
             {{"total_ms", t.total_ms},
              {"prefix_ms", t.prefix_ms},
              {"decode_ms", t.decode_ms},
              {"prefix_tokens", t.prefix_tokens},
              {"prompt_tokens", t.prompt_tokens},
              {"generated_tokens", t.generated_tokens},
              {"evaluated_tokens", t.evaluated_tokens},
              {"reused_tokens", t.reused_tokens},
              {"cache", t.cache_source},
              {"head_steps", o.stats.head_steps},
              {"restricted_head_steps", o.stats.restricted_steps},
              {"jump_forward_tokens", o.stats.forced_tokens},
              {"passes", o.stats.model_calls},
              {"drafted_tokens", o.stats.drafted_tokens},
              {"accepted_tokens", o.stats.accepted_tokens}}}};
  if (!o.parsed.ok()) {
    j["error"] = o.parsed.ErrorSummary();
    j["raw"] = o.parsed.raw;
  }
  return j;
}

}  // namespace fgemma
