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
  pending_.reserve(4096);
  for (const CallGrammar::Node& node : grammar_.nodes())
    if (node.kind == CallGrammar::Kind::kEnum)
      for (const std::string& v : node.choices) enum_values_.push_back(Lower(v));
  std::sort(enum_values_.begin(), enum_values_.end());
  enum_values_.erase(std::unique(enum_values_.begin(), enum_values_.end()), enum_values_.end());
}

// The decode loop. Each turn of it either appends the grammar's forced continuation (jump-forward)
// or makes one pass over the model: the tokens pending, then, when drafting, guessed tokens with
// the forced runs they lead to, a head before each guess and one after them all
// (call_generator_pass.cpp). Without drafts a pass has one head: plain constrained decoding.
Status CallGenerator::Generate(Session& session, std::span<const int32_t> prompt, const ConstrainedOptions& opt,
                               std::vector<int32_t>* out, ConstrainedStats* stats) {
  StartTurn(prompt, opt, out);
  ConstrainedStats st;
  size_t forced_next = 0;  // jump-forward off: tokens of forced_ already chosen by their own head
  while (!matcher_.Done() && out->size() < opt.max_tokens) {
    if (forced_next >= forced_.size()) {
      vocab_.ForcedTokens(matcher_, &forced_);
      forced_next = 0;
    }
    if (!forced_.empty() && opt.jump_forward) {
      // The whole forced run, evaluated with the next pass. The token cap holds inside a run too, so
      // a limit gives the same tokens with jump-forward on or off.
      FGEMMA_RETURN_IF_ERROR(AppendForced(opt, out, &st));
      forced_.clear();
      continue;
    }
    // With jump-forward off a forced token is the only one its head may choose.
    const int32_t* forced = forced_.empty() ? nullptr : &forced_[forced_next++];
    FGEMMA_RETURN_IF_ERROR(RunPass(session, opt, forced, out, &st));
  }
  st.tokens = out->size();
  if (stats) *stats = st;
  return Status::Ok();
}

void CallGenerator::StartTurn(std::span<const int32_t> prompt, const ConstrainedOptions& opt, std::vector<int32_t>* out) {
  drafting_ = opt.draft && opt.jump_forward && opt.max_draft > 0;
  matcher_ = CallMatcher(&grammar_);
  if (opt.choice_hook) opt.choice_hook->Start();
  out->clear();
  written_.clear();
  forced_.clear();
  pending_.assign(prompt.begin(), prompt.end());
  const size_t max_slots = drafting_ ? opt.max_draft + 1 : 1;
  if (slots_.empty()) {  // the pass's own head: room for any allowed set, so decoding never allocates
    slots_.emplace_back(&grammar_);
    slots_[0].ids.reserve(mask_.size() * 64);
  }
  if (slots_.size() < max_slots) slots_.resize(max_slots, HeadSlot(&grammar_));
  if (heads_.size() < max_slots) heads_.resize(max_slots);
  if (drafting_)
    NameTool(opt.draft_anchored < opt.draft_sources.size() ? std::string_view(opt.draft_sources[opt.draft_anchored])
                                                           : std::string_view(),
             opt.draft_guessers);
}

Status CallGenerator::AppendToken(const ConstrainedOptions& opt, int32_t id, std::vector<int32_t>* out) {
  if (opt.choice_hook) FGEMMA_RETURN_IF_ERROR(opt.choice_hook->Appended(id));
  out->push_back(id);
  if (drafting_) written_ += vocab_.TokenText(id);  // what the guesser reads; plain decoding needs no text
  if (opt.on_token && !opt.on_token(id)) return Status(ErrorCode::kCancelled, "generation cancelled");
  return Status::Ok();
}

Status CallGenerator::AppendForcedToken(const ConstrainedOptions& opt, int32_t id, std::vector<int32_t>* out) {
  if (!vocab_.FeedToken(matcher_, id)) return Internal("forced token refused by the grammar");
  return AppendToken(opt, id, out);
}

Status CallGenerator::AppendForced(const ConstrainedOptions& opt, std::vector<int32_t>* out, ConstrainedStats* st) {
  for (int32_t id : forced_) {
    if (out->size() >= opt.max_tokens) break;
    FGEMMA_RETURN_IF_ERROR(AppendForcedToken(opt, id, out));
    pending_.push_back(id);
  }
  st->forced_tokens += forced_.size();
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
