#include "runtime/call_generator.h"

#include <algorithm>

#include "runtime/utterance_match.h"

namespace fgemma {

CallGenerator::CallGenerator(const ConstraintVocab& vocab, const CallGrammar& grammar, int32_t vocab_size,
                             AllowedCache* cache)
    : vocab_(vocab),
      grammar_(grammar),
      matcher_(&grammar),
      scratch_(vocab.NewScratch(CallMatcher(&grammar))),
      mask_((static_cast<size_t>(vocab_size) + 63) / 64),
      cache_(cache) {
  allowed_.reserve(static_cast<size_t>(vocab_size));
  pending_.reserve(4096);
  for (const CallGrammar::Node& node : grammar_.nodes())
    if (node.kind == CallGrammar::Kind::kEnum)
      for (const std::string& v : node.choices) enum_values_.push_back(Lower(v));
  std::sort(enum_values_.begin(), enum_values_.end());
  enum_values_.erase(std::unique(enum_values_.begin(), enum_values_.end()), enum_values_.end());
}

Status CallGenerator::Generate(Session& session, std::span<const int32_t> prompt, const ConstrainedOptions& opt,
                               std::vector<int32_t>* out, ConstrainedStats* stats) {
  if (opt.draft && opt.jump_forward && opt.max_draft > 0) return GenerateDrafted(session, prompt, opt, out, stats);
  matcher_ = CallMatcher(&grammar_);
  ChoiceHook* hook = opt.choice_hook;
  if (hook) hook->Start();
  ConstrainedStats st;
  out->clear();
  pending_.assign(prompt.begin(), prompt.end());
  size_t forced_next = 0;  // tokens of forced_ already emitted (jump-forward off)
  forced_.clear();

  while (!matcher_.Done() && out->size() < opt.max_tokens) {
    if (forced_next >= forced_.size()) {
      vocab_.ForcedTokens(matcher_, &forced_);
      forced_next = 0;
    }
    if (!forced_.empty() && opt.jump_forward) {
      // Append the whole forced run; it is evaluated with the next head step's batch. The token cap
      // holds inside a run too, so a limit gives the same tokens with jump-forward on or off.
      for (int32_t id : forced_) {
        if (out->size() >= opt.max_tokens) break;
        if (!vocab_.FeedToken(matcher_, id)) return Internal("forced token refused by the grammar");
        if (hook) FGEMMA_RETURN_IF_ERROR(hook->Appended(id));
        out->push_back(id);
        pending_.push_back(id);
        if (opt.on_token && !opt.on_token(id)) return Status(ErrorCode::kCancelled, "generation cancelled");
      }
      st.forced_tokens += forced_.size();
      forced_.clear();
      continue;
    }
    // One head step. The allowed set is either the next forced token or the grammar's choice.
    const ConstraintVocab::TextSet* text = nullptr;
    if (!forced_.empty()) {
      allowed_.assign(1, forced_[forced_next++]);
    } else {
      GrammarAllowed(matcher_, &allowed_, &text);
      if (allowed_.empty() && (text == nullptr || text->count == 0))
        return Internal("grammar allows no token (constraint compiler bug)");
    }
    const size_t allowed_count = allowed_.size() + (text ? text->count : 0);
    HeadRequest head;
    head.index = pending_.size() - 1;
    const bool restrict = opt.restricted_head && allowed_count <= opt.restricted_max;
    if (restrict && text != nullptr) {  // a small vocabulary: list the free-text set's ids too
      for (size_t w = 0; w < text->mask.size(); ++w) {
        for (uint64_t bits = text->mask[w]; bits != 0; bits &= bits - 1)
          allowed_.push_back(static_cast<int32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits))));
      }
    }
    if (restrict) {
      head.candidates = allowed_;
      st.head_rows += allowed_.size();
      ++st.restricted_steps;
    } else {
      std::fill(mask_.begin(), mask_.end(), 0);
      if (text != nullptr) std::copy_n(text->mask.begin(), std::min(text->mask.size(), mask_.size()), mask_.begin());
      for (int32_t id : allowed_) mask_[static_cast<uint32_t>(id) >> 6] |= 1ull << (id & 63);
      head.allowed_mask = mask_.data();
      st.head_rows += static_cast<size_t>(session.model().config().vocab_size);
    }
    if (pending_.empty()) return Internal("constrained step with nothing to evaluate");
    FGEMMA_RETURN_IF_ERROR(session.Evaluate(pending_, std::span<HeadRequest>(&head, 1)));
    ++st.model_calls;
    ++st.head_steps;
    int32_t token = head.argmax;
    if (hook) {
      HeadChoice choice;
      choice.argmax = head.argmax;
      if (restrict) choice.candidates = allowed_;
      else choice.allowed_mask = mask_.data();
      FGEMMA_TRY(token, hook->Choose(choice));
      if (!choice.Allows(token)) return InvalidArgument("choice hook took token " + std::to_string(token) + ", which the grammar does not allow");
      FGEMMA_RETURN_IF_ERROR(hook->Appended(token));
    }
    if (!vocab_.FeedToken(matcher_, token)) return Internal("head chose a token outside the allowed set");
    out->push_back(token);
    pending_.assign(1, token);
    if (opt.on_token && !opt.on_token(token)) return Status(ErrorCode::kCancelled, "generation cancelled");
  }
  st.tokens = out->size();
  if (stats) *stats = st;
  return Status::Ok();
}

// *ids (and *text, a free-text set) := what the grammar allows in state m. Structural
// states (names, keys, enum values, "text or a call") repeat across requests with the same grammar,
// so their sets are looked up in, and added to, the shared cache; text states depend on the bytes
// written so far and are always searched.
void CallGenerator::GrammarAllowed(const CallMatcher& m, std::vector<int32_t>* ids,
                                   const ConstraintVocab::TextSet** text) {
  std::vector<int32_t>& allowed = *ids;
  *text = nullptr;
  uint32_t text_key = 0, room = 0;
  const bool structural = cache_ != nullptr && !m.TextState(&text_key, &room);
  if (structural) {
    state_key_.clear();
    m.StateKey(&state_key_);
    if (auto it = cache_->sets.find(state_key_); it != cache_->sets.end()) {
      const AllowedCache::Entry& cached = it->second;
      if (cached.is_mask) {
        allowed.clear();
        *text = &cached.mask;
      } else {
        allowed.assign(cached.ids.begin(), cached.ids.end());
      }
      return;
    }
  }
  vocab_.Allowed(m, scratch_, &allowed, text);
  // Small sets are kept as ids, large ones as a vocabulary bit mask; both kinds are capped in number.
  const bool small = allowed.size() < AllowedCache::kMaskFrom;
  if (!structural || *text != nullptr || cache_->sets.size() >= AllowedCache::kMaxEntries ||
      (!small && cache_->masks >= AllowedCache::kMaxMasks)) {
    return;
  }
  AllowedCache::Entry& entry = cache_->sets[state_key_];
  if (small) {
    entry.ids = allowed;
    return;
  }
  entry.is_mask = true;
  entry.mask.mask.assign(mask_.size(), 0);
  for (int32_t id : allowed) entry.mask.mask[static_cast<uint32_t>(id) >> 6] |= 1ull << (id & 63);
  entry.mask.count = allowed.size();
  ++cache_->masks;
}

bool HeadChoice::Allows(int32_t id) const {
  if (id < 0) return false;
  if (allowed_mask != nullptr) return (allowed_mask[static_cast<uint32_t>(id) >> 6] >> (id & 63) & 1) != 0;
  return std::find(candidates.begin(), candidates.end(), id) != candidates.end();
}

}  // namespace fgemma
