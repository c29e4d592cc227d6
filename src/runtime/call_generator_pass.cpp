// One pass of CallGenerator's decode loop (call_generator.cpp), drafted or not.
//
// A pass evaluates the tokens pending (the last choice and the forced run after it), followed, when
// drafting, by a guess (BuildGuess, call_generator_guess.cpp): tokens of continuations found by
// LookupDrafts, each checked against the grammar, with the forced runs the grammar appends after
// them. Every position where the grammar offers a choice gets a head, restricted to that state's
// allowed set exactly as a plain step would be. The heads are then read in order: a head that picks
// the guessed token confirms it (with its forced run), the first that does not gives the token
// itself, and the rejected positions are taken back (Session::Rewind). Each position's head sees
// the same bits as in one-token decoding (batched kernels are exact: matmul_test
// BatchEqualsOneTokenAtATime, attention's run-order invariance), so the tokens, the ChoiceHook's
// calls and on_token's are those of decoding without drafts. Without a guess the pass is one head
// step: plain constrained decoding.
#include <algorithm>

#include "runtime/call_generator.h"
#include "runtime/draft_lookup.h"

namespace fgemma {

Status CallGenerator::RunPass(Session& session, const ConstrainedOptions& opt, const int32_t* forced,
                              std::vector<int32_t>* out, ConstrainedStats* st) {
  if (pending_.empty()) return Internal("constrained step with nothing to evaluate");
  PassTimer timer(drafting_ && static_cast<bool>(opt.on_draft_pass));
  // The batch: pending tokens, then the guess with its forced runs; slot k's head sits before the
  // k-th guessed token (the last slot, after every guess, gives the next choice).
  batch_.assign(pending_.begin(), pending_.end());
  guesses_.clear();
  guess_sources_.clear();
  slots_[0].state = matcher_;
  heads_[0] = HeadRequest{};
  heads_[0].index = batch_.size() - 1;
  size_t n_slots = 1;
  const size_t limit = session.max_speculative_batch();
  if (drafting_ && batch_.size() < limit) {
    const size_t room = std::min({opt.max_draft, limit - batch_.size(), opt.max_tokens - out->size()});
    n_slots = BuildGuess(opt, room);
  }
  timer.Lap();
  for (size_t k = 0; k < n_slots; ++k)
    FGEMMA_RETURN_IF_ERROR(PrepareHead(slots_[k], k == 0 ? forced : nullptr, opt, session, &heads_[k], st));
  timer.Lap();
  const std::span<HeadRequest> heads(heads_.data(), n_slots);
  const size_t undoable = batch_.size() - pending_.size();
  if (undoable > 0) FGEMMA_RETURN_IF_ERROR(session.EvaluateSpeculative(batch_, heads, undoable));
  else FGEMMA_RETURN_IF_ERROR(session.Evaluate(batch_, heads));
  timer.Lap();
  ++st->model_calls;
  st->drafted_tokens += guesses_.size();
  const size_t accepted_before = st->accepted_tokens;
  if (timer.on()) written_before_ = written_;
  size_t kept = 0;
  FGEMMA_RETURN_IF_ERROR(ReadHeads(session, opt, n_slots, out, st, &kept));
  if (timer.on()) TracePass(opt, n_slots, kept, st->accepted_tokens - accepted_before, timer);
  return Status::Ok();
}

Status CallGenerator::PrepareHead(HeadSlot& slot, const int32_t* forced, const ConstrainedOptions& opt,
                                  const Session& session, HeadRequest* head, ConstrainedStats* st) {
  const ConstraintVocab::TextSet* text = nullptr;
  if (forced != nullptr) {
    slot.ids.assign(1, *forced);
  } else {
    GrammarAllowed(slot.state, &slot.ids, &text);
    if (slot.ids.empty() && (text == nullptr || text->count == 0))
      return Internal("grammar allows no token (constraint compiler bug)");
  }
  const size_t count = slot.ids.size() + (text ? text->count : 0);
  slot.restricted = opt.restricted_head && count <= opt.restricted_max;
  // `text` may live in the scratch of the next GrammarAllowed: used up here.
  if (slot.restricted) {
    if (text != nullptr) {  // a small vocabulary: list the free-text set's ids too
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

Result<int32_t> CallGenerator::ChooseToken(const ConstrainedOptions& opt, const HeadSlot& slot, int32_t argmax) {
  if (opt.choice_hook == nullptr) return argmax;
  HeadChoice choice;
  choice.argmax = argmax;
  if (slot.restricted) choice.candidates = slot.ids;
  else choice.allowed_mask = slot.mask.data();
  int32_t token = argmax;
  FGEMMA_TRY(token, opt.choice_hook->Choose(choice));
  if (!choice.Allows(token))
    return InvalidArgument("choice hook took token " + std::to_string(token) + ", which the grammar does not allow");
  return token;
}

Status CallGenerator::ReadHeads(Session& session, const ConstrainedOptions& opt, size_t n_slots,
                                std::vector<int32_t>* out, ConstrainedStats* st, size_t* kept_out) {
  size_t kept = pending_.size();
  pending_.clear();
  for (size_t k = 0; k < n_slots; ++k) {
    int32_t token = heads_[k].argmax;
    FGEMMA_TRY(token, ChooseToken(opt, slots_[k], token));
    if (!vocab_.FeedToken(matcher_, token)) return Internal("head chose a token outside the allowed set");
    FGEMMA_RETURN_IF_ERROR(AppendToken(opt, token, out));
    if (k >= guesses_.size() || token != guesses_[k]) {
      pending_.assign(1, token);  // the first miss (or the last slot): evaluated next pass
      break;
    }
    ++st->accepted_tokens;
    if (batch_[kept] != token) return Internal("draft out of step with its batch");
    ++kept;
    // Its forced runs: those the batch holds are evaluated, the rest are pending.
    while (!matcher_.Done() && out->size() < opt.max_tokens) {
      vocab_.ForcedTokens(matcher_, &confirmed_forced_);
      if (confirmed_forced_.empty()) break;
      for (int32_t id : confirmed_forced_) {
        if (out->size() >= opt.max_tokens) break;
        FGEMMA_RETURN_IF_ERROR(AppendForcedToken(opt, id, out));
        if (pending_.empty() && kept < batch_.size()) {
          if (batch_[kept] != id) return Internal("draft's forced run out of step with its batch");
          ++kept;
        } else {
          pending_.push_back(id);
        }
      }
      st->forced_tokens += confirmed_forced_.size();
    }
    if (matcher_.Done() || out->size() >= opt.max_tokens || !pending_.empty()) break;
    if (k + 1 >= n_slots || heads_[k + 1].index + 1 != kept) return Internal("draft lost its next head");
  }
  if (kept < batch_.size()) FGEMMA_RETURN_IF_ERROR(session.Rewind(batch_.size() - kept));
  *kept_out = kept;
  return Status::Ok();
}

void CallGenerator::TracePass(const ConstrainedOptions& opt, size_t n_slots, size_t kept, size_t accepted,
                              const PassTimer& timer) {
  full_heads_.resize(n_slots);
  for (size_t k = 0; k < n_slots; ++k) full_heads_[k] = slots_[k].restricted ? 0 : 1;
  DraftPassTrace trace;
  trace.written = written_before_;
  trace.guesses = guesses_;
  trace.sources = guess_sources_;
  trace.full_heads = full_heads_;
  trace.batch = batch_.size();
  trace.kept = kept;
  trace.accepted = accepted;
  trace.guess_ms = timer.Ms(0, 1);
  trace.heads_ms = timer.Ms(1, 2);
  trace.model_ms = timer.Ms(2, 3);
  trace.read_ms = timer.MsSince(3);
  opt.on_draft_pass(trace);
}

}  // namespace fgemma
