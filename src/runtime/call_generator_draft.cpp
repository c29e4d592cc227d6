// CallGenerator's drafting form: exact speculative decoding under the call grammar.
//
// A pass evaluates the tokens pending (the last choice and the forced run after it) followed by a
// guess (BuildGuess, call_generator_guess.cpp): tokens of continuations found by LookupDrafts, each
// checked against the grammar, with the forced runs the grammar appends after them. Every position where the grammar offers a choice gets
// a head, restricted to that state's allowed set exactly as a plain step would be. The heads are
// then read in order: a head that picks the guessed token confirms it (with its forced run), the
// first that does not gives the token itself, and the rejected positions are taken back
// (Session::Rewind). Each position's head sees the same bits as in one-token decoding (batched
// kernels are exact: matmul_test BatchEqualsOneTokenAtATime, attention's run-order invariance), so
// the tokens, the ChoiceHook's calls and on_token's are those of Generate without drafts.
#include <algorithm>
#include <chrono>

#include "runtime/call_generator.h"
#include "runtime/draft_lookup.h"

namespace fgemma {
Status CallGenerator::PrepareHead(HeadSlot& slot, const ConstrainedOptions& opt, const Session& session,
                                  HeadRequest* head, ConstrainedStats* st) {
  const ConstraintVocab::TextSet* text = nullptr;
  GrammarAllowed(slot.state, &slot.ids, &text);
  if (slot.ids.empty() && (text == nullptr || text->count == 0))
    return Internal("grammar allows no token (constraint compiler bug)");
  const size_t count = slot.ids.size() + (text ? text->count : 0);
  slot.restricted = opt.restricted_head && count <= opt.restricted_max;
  // `text` may live in the scratch of the next GrammarAllowed: used up here.
  if (slot.restricted) {
    if (text != nullptr) {
      for (size_t w = 0; w < text->mask.size(); ++w) {
        for (uint64_t bits = text->mask[w]; bits != 0; bits &= bits - 1)
          slot.ids.push_back(static_cast<int32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits))));
      }
    }
    head->candidates = slot.ids;
    st->head_rows += slot.ids.size();
    ++st->restricted_steps;
  } else {
    slot.mask.assign(mask_.size(), 0);
    if (text != nullptr) std::copy_n(text->mask.begin(), std::min(text->mask.size(), slot.mask.size()), slot.mask.begin());
    for (int32_t id : slot.ids) slot.mask[static_cast<uint32_t>(id) >> 6] |= 1ull << (id & 63);
    head->allowed_mask = slot.mask.data();
    st->head_rows += static_cast<size_t>(session.model().config().vocab_size);
  }
  ++st->head_steps;
  return Status::Ok();
}

Status CallGenerator::GenerateDrafted(Session& session, std::span<const int32_t> prompt, const ConstrainedOptions& opt,
                                      std::vector<int32_t>* out, ConstrainedStats* stats) {
  matcher_ = CallMatcher(&grammar_);
  ChoiceHook* hook = opt.choice_hook;
  if (hook) hook->Start();
  ConstrainedStats st;
  out->clear();
  written_.clear();
  pending_.assign(prompt.begin(), prompt.end());
  const size_t max_slots = opt.max_draft + 1;
  if (slots_.size() < max_slots) slots_.resize(max_slots, HeadSlot(&grammar_));
  heads_.resize(max_slots);
  NameTool(opt.draft_anchored < opt.draft_sources.size() ? std::string_view(opt.draft_sources[opt.draft_anchored])
                                                         : std::string_view());

  // Appends a forced token as Generate's jump-forward does.
  auto emit_forced = [&](int32_t id) -> Status {
    if (!vocab_.FeedToken(matcher_, id)) return Internal("forced token refused by the grammar");
    if (hook) FGEMMA_RETURN_IF_ERROR(hook->Appended(id));
    out->push_back(id);
    written_ += vocab_.TokenText(id);
    if (opt.on_token && !opt.on_token(id)) return Status(ErrorCode::kCancelled, "generation cancelled");
    return Status::Ok();
  };

  while (!matcher_.Done() && out->size() < opt.max_tokens) {
    vocab_.ForcedTokens(matcher_, &forced_);
    if (!forced_.empty()) {
      for (int32_t id : forced_) {
        if (out->size() >= opt.max_tokens) break;
        FGEMMA_RETURN_IF_ERROR(emit_forced(id));
        pending_.push_back(id);
      }
      st.forced_tokens += forced_.size();
      continue;
    }
    if (pending_.empty()) return Internal("constrained step with nothing to evaluate");

    // The pass: pending tokens, then the guess with its forced runs; slot k's head sits before the
    // k-th guessed token (the last slot, after every guess, gives the next choice).
    batch_.assign(pending_.begin(), pending_.end());
    guesses_.clear();
    size_t n_slots = 1;
    slots_[0].state = matcher_;
    heads_[0] = HeadRequest{};
    heads_[0].index = batch_.size() - 1;
    guess_sources_.clear();
    using Clock = std::chrono::steady_clock;
    const bool timed = static_cast<bool>(opt.on_draft_pass);
    const Clock::time_point t0 = timed ? Clock::now() : Clock::time_point();
    const size_t limit = session.max_speculative_batch();
    if (batch_.size() < limit) {
      const size_t room = std::min({opt.max_draft, limit - batch_.size(), opt.max_tokens - out->size()});
      n_slots = BuildGuess(opt, room);
    }
    const Clock::time_point t1 = timed ? Clock::now() : t0;
    for (size_t k = 0; k < n_slots; ++k) FGEMMA_RETURN_IF_ERROR(PrepareHead(slots_[k], opt, session, &heads_[k], &st));
    const Clock::time_point t2 = timed ? Clock::now() : t0;
    const std::span<HeadRequest> heads(heads_.data(), n_slots);
    const size_t undoable = batch_.size() - pending_.size();
    if (undoable > 0) FGEMMA_RETURN_IF_ERROR(session.EvaluateSpeculative(batch_, heads, undoable));
    else FGEMMA_RETURN_IF_ERROR(session.Evaluate(batch_, heads));
    const Clock::time_point t3 = timed ? Clock::now() : t0;
    ++st.model_calls;
    st.drafted_tokens += guesses_.size();

    // Read the heads in order; keep what they confirm.
    const size_t accepted_before = st.accepted_tokens;
    if (opt.on_draft_pass) written_before_ = written_;
    size_t kept = pending_.size();
    pending_.clear();
    for (size_t k = 0; k < n_slots; ++k) {
      HeadSlot& slot = slots_[k];
      int32_t token = heads_[k].argmax;
      if (hook) {
        HeadChoice choice;
        choice.argmax = token;
        if (slot.restricted) choice.candidates = slot.ids;
        else choice.allowed_mask = slot.mask.data();
        FGEMMA_TRY(token, hook->Choose(choice));
        if (!choice.Allows(token))
          return InvalidArgument("choice hook took token " + std::to_string(token) + ", which the grammar does not allow");
        FGEMMA_RETURN_IF_ERROR(hook->Appended(token));
      }
      if (!vocab_.FeedToken(matcher_, token)) return Internal("head chose a token outside the allowed set");
      out->push_back(token);
      written_ += vocab_.TokenText(token);
      if (opt.on_token && !opt.on_token(token)) return Status(ErrorCode::kCancelled, "generation cancelled");
      if (k >= guesses_.size() || token != guesses_[k]) {
        pending_.assign(1, token);  // the first miss (or the last slot): evaluated next pass
        break;
      }
      ++st.accepted_tokens;
      if (batch_[kept] != token) return Internal("draft out of step with its batch");
      ++kept;
      // Its forced runs: those the batch holds are evaluated, the rest are pending.
      while (!matcher_.Done() && out->size() < opt.max_tokens) {
        vocab_.ForcedTokens(matcher_, &forced_);
        if (forced_.empty()) break;
        for (int32_t id : forced_) {
          if (out->size() >= opt.max_tokens) break;
          FGEMMA_RETURN_IF_ERROR(emit_forced(id));
          if (pending_.empty() && kept < batch_.size()) {
            if (batch_[kept] != id) return Internal("draft's forced run out of step with its batch");
            ++kept;
          } else {
            pending_.push_back(id);
          }
        }
        st.forced_tokens += forced_.size();
      }
      if (matcher_.Done() || out->size() >= opt.max_tokens || !pending_.empty()) break;
      if (k + 1 >= n_slots || heads_[k + 1].index + 1 != kept) return Internal("draft lost its next head");
    }
    if (kept < batch_.size()) FGEMMA_RETURN_IF_ERROR(session.Rewind(batch_.size() - kept));
    if (opt.on_draft_pass) {
      full_heads_.resize(n_slots);
      for (size_t k = 0; k < n_slots; ++k) full_heads_[k] = slots_[k].restricted ? 0 : 1;
      DraftPassTrace trace;
      trace.written = written_before_;
      trace.guesses = guesses_;
      trace.sources = guess_sources_;
      trace.full_heads = full_heads_;
      trace.batch = batch_.size();
      trace.kept = kept;
      trace.accepted = st.accepted_tokens - accepted_before;
      auto ms = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
      trace.guess_ms = ms(t0, t1);
      trace.heads_ms = ms(t1, t2);
      trace.model_ms = ms(t2, t3);
      trace.read_ms = ms(t3, Clock::now());
      opt.on_draft_pass(trace);
    }
  }
  st.tokens = out->size();
  if (stats) *stats = st;
  return Status::Ok();
}

}  // namespace fgemma
