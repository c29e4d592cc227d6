// CallGenerator's drafting form: exact speculative decoding under the call grammar.
//
// A pass evaluates the tokens pending (the last choice and the forced run after it) followed by a
// guess: tokens of a continuation found by LookupDraft, each checked against the grammar, with the
// forced runs the grammar appends after them. Every position where the grammar offers a choice gets
// a head, restricted to that state's allowed set exactly as a plain step would be. The heads are
// then read in order: a head that picks the guessed token confirms it (with its forced run), the
// first that does not gives the token itself, and the rejected positions are taken back
// (Session::Rewind). Each position's head sees the same bits as in one-token decoding (batched
// kernels are exact: matmul_test BatchEqualsOneTokenAtATime, attention's run-order invariance), so
// the tokens, the ChoiceHook's calls and on_token's are those of Generate without drafts.
#include <algorithm>

#include "runtime/call_generator.h"
#include "runtime/draft_lookup.h"

namespace fgemma {
namespace {
constexpr size_t kLookupBytes = 96;  // continuation text looked up per pass
constexpr size_t kEncodeBytes = 48;  // encoded at a time (re-encoded after each forced run)
constexpr size_t kMaxCandidates = 32;  // continuations tried per pass (most fail at their first token)
}  // namespace

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
    const size_t limit = session.max_speculative_batch();
    if (batch_.size() < limit) {
      const size_t room_all = std::min({opt.max_draft, limit - batch_.size(), opt.max_tokens - out->size()});
      // Candidates best first; the first whose first token the grammar accepts is the guess.
      uint32_t text_key = 0, text_room = 0;
      LookupDrafts(written_, opt.draft_sources, opt.draft_anchored, kLookupBytes,
                   /*words=*/!matcher_.TextState(&text_key, &text_room), kMaxCandidates, &candidates_);
      for (const DraftCandidate& candidate : candidates_) {
        if (!guesses_.empty()) break;
        const std::string_view cont = candidate.text;
        // Positions of the batch (guesses and their forced runs) vs guesses this candidate is worth.
        const size_t room = room_all;
        size_t worth = candidate.max_tokens;
        CallMatcher s = matcher_;
        size_t used = 0, cursor = 0;
        bool open = true;
        EncodeOptions eo;
        eo.parse_special = true;
        while (open && cursor < cont.size() && used < room && guesses_.size() < worth) {
          const std::vector<int32_t> toks = vocab_.tokenizer().Encode(cont.substr(cursor, kEncodeBytes), eo);
          if (toks.empty()) break;
          for (int32_t tok : toks) {
            if (used >= room || guesses_.size() >= worth) {
              open = false;
              break;
            }
            CallMatcher next = s;
            if (!vocab_.FeedToken(next, tok)) {
              open = false;
              break;
            }
            s = next;
            batch_.push_back(tok);
            guesses_.push_back(tok);
            ++used;
            cursor += vocab_.TokenText(tok).size();
            // The forced runs after it, whole, as the loop above appends them.
            bool ran = false;
            while (open && !s.Done()) {
              vocab_.ForcedTokens(s, &draft_forced_);
              if (draft_forced_.empty()) break;
              ran = true;
              std::string forced_text;
              for (int32_t id : draft_forced_) {
                if (used >= room || !vocab_.FeedToken(s, id)) {  // the batch ends inside the run
                  open = false;
                  break;
                }
                batch_.push_back(id);
                ++used;
                forced_text += vocab_.TokenText(id);
              }
              // The guess goes on only where the source agrees with the forced text.
              if (cont.substr(cursor).starts_with(forced_text)) cursor += forced_text.size();
              else cursor = cont.size();
            }
            if (!open || s.Done()) {
              open = false;
              break;
            }
            slots_[n_slots].state = s;
            heads_[n_slots] = HeadRequest{};
            heads_[n_slots].index = batch_.size() - 1;
            ++n_slots;
            // Verifying a guess in free text takes a whole-vocabulary head: only strong evidence
            // (an earlier output's beginning, a long match) guesses on there.
            uint32_t key = 0, left = 0;
            if (worth < 8 && s.TextState(&key, &left)) worth = guesses_.size();
            if (ran) break;  // re-encode from the new cursor: the run's bytes split the text
          }
        }
      }
    }
    for (size_t k = 0; k < n_slots; ++k) FGEMMA_RETURN_IF_ERROR(PrepareHead(slots_[k], opt, session, &heads_[k], &st));
    const std::span<HeadRequest> heads(heads_.data(), n_slots);
    const size_t undoable = batch_.size() - pending_.size();
    if (undoable > 0) FGEMMA_RETURN_IF_ERROR(session.EvaluateSpeculative(batch_, heads, undoable));
    else FGEMMA_RETURN_IF_ERROR(session.Evaluate(batch_, heads));
    ++st.model_calls;
    st.drafted_tokens += guesses_.size();

    // Read the heads in order; keep what they confirm.
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
  }
  st.tokens = out->size();
  if (stats) *stats = st;
  return Status::Ok();
}

}  // namespace fgemma
