// CallGenerator's guesser: the tokens a drafted pass verifies (call_generator_pass.cpp runs them).
//
// A guess is built from candidates (runtime/draft_lookup.h), each checked token by token against
// the grammar, with the forced runs the grammar appends after every guessed token. Where a
// candidate's text ends, or departs from what the grammar allows or forces (a value copied from the
// utterance ends at its closing <escape>; an earlier call had another key next), the guess goes on
// from a new lookup at the text it has reached (ConstrainedOptions::draft_lookups): one pass can
// then cover a copied value and the call's closing tokens after it. A word of the utterance is
// kept only where it is a whole value (or key): it ends at a word boundary where the grammar's
// value ends, so a word that merely begins like an enum value guesses nothing.
#include <algorithm>
#include <cctype>

#include "runtime/call_generator.h"
#include "runtime/utterance_match.h"

namespace fgemma {
namespace {
constexpr size_t kLookupBytes = 96;    // continuation text looked up
constexpr size_t kEncodeBytes = 48;    // encoded at a time (re-encoded after each forced run)
constexpr size_t kMaxCandidates = 32;  // continuations tried per lookup (most fail at their first token)
constexpr size_t kNameWorth = 8;       // guessed tokens the named tool's candidate is worth
constexpr size_t kTextWorth = 6;       // guessed free-text tokens an utterance's match is worth
// FunctionGemma's call opening (the grammar refuses a guess of it where no call may start).
constexpr std::string_view kCallStart = "<start_function_call>call:";
constexpr std::string_view kCall = "call:";
constexpr std::string_view kClose = "}";  // then <end_function_call>, forced

// After "key:" (a number, a boolean, an enum's <escape> to come) or "key:<escape>" (an enum's
// value), outside free text: where the utterance's words are tried first.
bool AtValue(std::string_view hyp, const CallMatcher& state) {
  uint32_t key = 0, left = 0;
  if (state.TextState(&key, &left)) return false;
  return (hyp.ends_with(':') && !hyp.ends_with(kCall)) || hyp.ends_with(":<escape>");
}

// After a call's '{' or a value's ',' outside free text: where a key comes next.
bool AtKey(std::string_view hyp, const CallMatcher& state) {
  uint32_t key = 0, left = 0;
  return !state.TextState(&key, &left) && (hyp.ends_with('{') || hyp.ends_with(','));
}

// Whether a continuation `cont` of an earlier call, guessed at `hyp` (grammar state `state`), starts
// with a value the utterance does not say: at a number or an enum ("brightness:" then "40", "mode:
// <escape>" then "cool"; booleans are said in other words, "on" for true), at a string's start, or
// with `inside_values` anywhere in a string or a number (the value so far and the rest: "07:15"
// again, not last call's "06:30"; "30", not "307"). The guess would be refused by the model more
// often than not, and a string's positions need whole-vocabulary heads. (An earlier output that
// begins with everything written so far, the model's own string included, is let go on inside it:
// a repeated command repeats its values, said or not.)
bool UnsaidValue(std::string_view hyp, const CallMatcher& state, std::string_view cont, std::string_view utterance,
                 bool inside_values) {
  constexpr std::string_view kEscape = "<escape>";
  uint32_t key = 0, left = 0;
  if (state.TextState(&key, &left)) {
    if (!inside_values && !hyp.ends_with(kEscape)) return false;
    const size_t open = hyp.rfind(kEscape);
    const std::string_view so_far = open == std::string_view::npos ? std::string_view() : hyp.substr(open + kEscape.size());
    const std::string_view rest = cont.substr(0, cont.find(kEscape));
    return !SaysValue(utterance, std::string(so_far) + std::string(rest));
  }
  if (!AtValue(hyp, state)) {
    // Inside a number ("volume:30" then "7"): the digits so far and the continuation's.
    const std::string_view so_far = NumberSoFar(hyp);
    if (!inside_values || so_far.empty() || cont.empty() || (!std::isdigit(static_cast<unsigned char>(cont[0])) && cont[0] != '.'))
      return false;
    const std::string_view rest = cont.substr(0, cont.find_first_of(",}]"));
    return !SaysValue(utterance, std::string(so_far) + std::string(rest));
  }
  std::string_view value = cont;
  if (hyp.ends_with(kEscape)) {
    value = value.substr(0, value.find(kEscape));  // an enum's value
  } else {
    if (value.starts_with(kEscape)) return false;  // an enum or a string to come: checked at its start
    value = value.substr(0, value.find_first_of(",}]"));
    if (value == "true" || value == "false") return false;
  }
  return !SaysValue(utterance, value);
}

}  // namespace

void CallGenerator::RankCandidates(const ConstrainedOptions& opt, const CallMatcher& s, std::string_view utterance,
                                   bool after_word, std::string_view word_rest) {
  const uint32_t g = opt.draft_guessers;
  uint32_t key = 0, left = 0;
  const bool text = s.TextState(&key, &left);
  // At a value the utterance's words come first.
  const bool value = (g & kGuessWordsFirst) && AtValue(hyp_, s);
  LookupDrafts(hyp_, opt.draft_sources, opt.draft_anchored, kLookupBytes, /*words=*/!text, kMaxCandidates,
               &candidates_, value);
  // Before or inside a function name: candidates that go on with the tool the utterance names
  // first, then that name itself, then the others.
  if ((g & kGuessNamedTool) && !named_tool_.empty()) {
    const size_t at = hyp_.rfind(kCall);
    const bool at_name = hyp_.empty() || (at != std::string::npos && hyp_.find('{', at) == std::string::npos);
    const std::string_view partial =
        at_name && !hyp_.empty() ? std::string_view(hyp_).substr(at + kCall.size()) : std::string_view();
    if (at_name && std::string_view(named_tool_).starts_with(partial)) {
      name_guess_ = hyp_.empty() ? std::string(kCallStart) : std::string();
      name_guess_ += std::string_view(named_tool_).substr(partial.size());
      name_guess_ += '{';
      const std::string_view want = std::string_view(name_guess_).substr(hyp_.empty() ? kCallStart.size() : 0);
      auto named = [&](const DraftCandidate& c) {
        if (!hyp_.empty()) return c.text.starts_with(want);
        const size_t call = c.text.find(kCall);
        return call != std::string_view::npos && c.text.substr(call + kCall.size()).starts_with(want);
      };
      const auto split = std::stable_partition(candidates_.begin(), candidates_.end(), named);
      candidates_.insert(split, DraftCandidate{name_guess_, kNameWorth, DraftSource::kName});
    }
  }
  // After a value (a word of the utterance, a string's or an enum's closing <escape>, a boolean,
  // an array) the call's close is guessed: last when it is the only way on (no key may follow),
  // first, before an earlier call's ',', when the utterance says nothing after the word ("Cool
  // the office down to 19") or no key sorting after the written ones is left (calls list their
  // keys sorted).
  const bool value_ended = after_word || (!text && (hyp_.ends_with("<escape>") || hyp_.ends_with("true") ||
                                                    hyp_.ends_with("false") || hyp_.ends_with(']')));
  if ((g & kGuessClose) && value_ended && s.Accepts('}')) {
    const bool said_all = after_word && std::none_of(word_rest.begin(), word_rest.end(), WordByte);
    const bool more = s.Accepts(',');
    const DraftCandidate close{kClose, 2, DraftSource::kClose};
    if (more && (said_all || !s.LaterKeyOpen()))
      candidates_.insert(candidates_.begin(), close);
    else if (!more)
      candidates_.push_back(close);
  }
  // At a key ('{' or ',' of a call's arguments), the keys whose values the utterance says come
  // first: "set_lights{" then "brightness:40,room:<escape>kitchen<escape>}" for "set the kitchen
  // lights to 40" (an earlier call's keys say less about this one).
  if ((g & kGuessSlots) && AtKey(hyp_, s)) {
    SlotGuesses(hyp_, utterance);
    for (size_t i = slot_guesses_.size(); i-- > 0;)
      candidates_.insert(candidates_.begin(), DraftCandidate{slot_guesses_[i], 16, DraftSource::kSlot});
  }
  // In a string (at its start or inside it), an earlier call's value of the same key with digits
  // ("datetime:<escape>2026-06-27T17:45:00") in the utterance's numbers ("on 2026-10-26 at 12:45":
  // "2026-10-26T12:45:00"), first: a date-time's digits are one token each and no lookup finds them
  // in order, while the form is the catalog's and the numbers are what the user said.
  if ((g & kGuessDigitForm) && text) {
    FormGuess(opt.draft_sources.first(std::min(opt.draft_anchored, opt.draft_sources.size())), utterance);
    if (!form_guess_.empty()) candidates_.insert(candidates_.begin(), DraftCandidate{form_guess_, 16, DraftSource::kForm});
  }
  // In an array of enum values the utterance names none of ("on weekdays"), the values in the
  // schema's order from the one after the last item: after an earlier output that begins with
  // everything written (a repeated command), before the rest.
  if (g & kGuessLists) {
    ListGuess(hyp_, utterance);
    if (!list_guess_.empty()) {
      const auto after = std::find_if(candidates_.begin(), candidates_.end(),
                                      [](const DraftCandidate& c) { return c.source != DraftSource::kHistory; });
      candidates_.insert(after, DraftCandidate{list_guess_, 16, DraftSource::kList});
    }
  }
}

std::optional<std::string_view> CallGenerator::CandidateText(const DraftCandidate& c, const CallMatcher& s,
                                                             std::string_view utterance, bool after_word,
                                                             uint32_t guessers) {
  std::string_view cont = c.text;
  // A word the grammar takes only in lowercase (an enum's "heat" for "Heat the living room"):
  // guessed so (only the word is kept: the rest of the utterance is not looked at).
  if (c.source == DraftSource::kWord && !cont.empty() && !s.Accepts(static_cast<uint8_t>(cont[0])) &&
      s.Accepts(static_cast<uint8_t>(std::tolower(static_cast<unsigned char>(cont[0]))))) {
    text_guess_ = Lower(cont);
    cont = text_guess_;
  }
  // Most candidates fail at their first byte: skip them before encoding ('<' may open a control
  // token, which the grammar takes as a symbol, not as bytes).
  if (cont.empty() || (cont[0] != '<' && !s.Accepts(static_cast<uint8_t>(cont[0])))) return std::nullopt;
  // After a whole word of the utterance the value has ended ("21 degrees"): not another digit.
  if (after_word && WordByte(cont[0])) return std::nullopt;
  // A word is a whole key or value: it does not go on from a part written before ("volume:3").
  if (c.source == DraftSource::kWord && !hyp_.empty() && WordByte(hyp_.back())) return std::nullopt;
  if ((guessers & kGuessSaidValue) && (c.source == DraftSource::kHistory || c.source == DraftSource::kHistoryMatch) &&
      UnsaidValue(hyp_, s, cont, utterance, /*inside_values=*/c.source == DraftSource::kHistoryMatch))
    return std::nullopt;
  uint32_t key = 0, left = 0;
  if ((guessers & kGuessTextEnd) && c.source == DraftSource::kTextMatch && s.TextState(&key, &left)) {
    const size_t end = TextEnd(c.text, enum_values_);
    if (end != std::string_view::npos) {
      text_guess_.assign(c.text.substr(0, end));
      text_guess_ += "<escape>";
      cont = text_guess_;
    }
  }
  return cont;
}

CallGenerator::GuessRun CallGenerator::RunCandidate(const DraftCandidate& c, std::string_view cont, const CallMatcher& s,
                                                    std::string_view utterance, uint32_t g, size_t room,
                                                    GuessCursor* at) {
  EncodeOptions eo;
  eo.parse_special = true;
  GuessRun run{s};
  CallMatcher& t = run.state;
  size_t worth = c.max_tokens, cursor = 0;
  uint32_t key = 0, left = 0;
  bool open = true;
  while (open && cursor < cont.size()) {
    if (at->used >= room || run.tokens >= worth) {
      run.limited = true;
      break;
    }
    // A chunk cut inside a word ("conta" of "contacts") or a control token ("<end_of" of
    // "<end_of_turn>") encodes into other tokens than the whole text has there: it ends before its
    // last space or '<' instead, where the next chunk starts with the text's own token.
    std::string_view chunk = cont.substr(cursor, kEncodeBytes);
    if (const size_t cut = chunk.find_last_of(" <"); cursor + chunk.size() < cont.size() && cut != std::string_view::npos && cut > 0)
      chunk = chunk.substr(0, cut);
    const std::vector<int32_t> toks = vocab_.tokenizer().Encode(chunk, eo);
    if (toks.empty()) break;
    for (int32_t tok : toks) {
      if (at->used >= room || run.tokens >= worth) {
        run.limited = true;
        open = false;
        break;
      }
      CallMatcher next = t;
      if (!vocab_.FeedToken(next, tok)) {
        run.stop_at = cursor;
        open = false;
        break;
      }
      t = next;
      batch_.push_back(tok);
      guesses_.push_back(tok);
      guess_sources_.push_back(c.source);
      ++at->used;
      ++run.tokens;
      const std::string tok_text = vocab_.TokenText(tok);
      hyp_ += tok_text;
      cursor += tok_text.size();
      bool ran = false;
      if (!AppendForcedRuns(cont, room, at, &run, &cursor, &ran)) {
        open = false;
        break;  // no head after a run the batch cuts
      }
      if (t.Done()) {
        run.done = true;
        open = false;
        break;
      }
      slots_[at->slots].state = t;
      heads_[at->slots] = HeadRequest{};
      heads_[at->slots].index = batch_.size() - 1;
      ++at->slots;
      // Verifying a guess in free text takes a whole-vocabulary head: only strong evidence
      // (an earlier output's beginning, a long match) guesses on there, and the utterance's
      // own text (a string value is mostly copied from it: "06:30", "lo-fi beats"), which
      // guesses on for kTextWorth tokens: the heads of one pass share a read of the embedding,
      // so a guessed text position costs a fraction of the pass a correct one saves.
      if (t.TextState(&key, &left)) {
        if (c.source == DraftSource::kTextMatch)
          worth = std::max(worth, kTextWorth);
        else if (worth < 8)
          worth = run.tokens;
      }
      const std::string_view rest = cursor < cont.size() ? cont.substr(cursor) : std::string_view();
      if (StopsAfterHead(c, rest, utterance, g, &run)) {
        open = false;
        break;
      }
      if (ran) break;  // re-encode from the new cursor: the run's bytes split the text
    }
  }
  return run;
}

bool CallGenerator::AppendForcedRuns(std::string_view cont, size_t room, GuessCursor* at, GuessRun* run, size_t* cursor,
                                     bool* ran) {
  CallMatcher& t = run->state;
  bool open = true;
  while (open && !t.Done()) {
    vocab_.ForcedTokens(t, &draft_forced_);
    if (draft_forced_.empty()) break;
    *ran = true;
    const size_t run_start = hyp_.size();
    for (int32_t id : draft_forced_) {
      if (at->used >= room || !vocab_.FeedToken(t, id)) {  // the batch ends inside the run
        open = false;
        run->limited = true;
        break;
      }
      batch_.push_back(id);
      ++at->used;
      hyp_ += vocab_.TokenText(id);
    }
    // The source goes on only where it agrees with the forced text.
    const std::string_view forced_text = std::string_view(hyp_).substr(run_start);
    if (!run->diverged && cont.substr(*cursor).starts_with(forced_text)) {
      *cursor += forced_text.size();
    } else if (!run->diverged) {
      run->diverged = true;
      run->stop_at = *cursor;
    }
  }
  return open;
}

bool CallGenerator::StopsAfterHead(const DraftCandidate& c, std::string_view rest, std::string_view utterance,
                                   uint32_t g, GuessRun* run) const {
  const CallMatcher& t = run->state;
  if (run->diverged) return true;
  // An earlier call reaching a value: the utterance may say it (a new lookup, words first); if not,
  // the same source is found again and goes on.
  if ((g & kGuessValueBreak) && c.source != DraftSource::kWord && AtValue(hyp_, t)) {
    run->at_value = true;
    return true;
  }
  // The same at a key (where a call's arguments open, after a value): the keys the utterance says
  // come first there.
  if ((g & kGuessSlots) && c.source != DraftSource::kSlot && c.source != DraftSource::kList && AtKey(hyp_, t)) {
    run->at_value = true;
    return true;
  }
  // An earlier call's string value is verified by whole-vocabulary heads: guessed only when the
  // utterance holds it ("07:15" again, not last time's song).
  uint32_t key = 0, left = 0;
  if ((g & kGuessStringCheck) && c.source != DraftSource::kWord && c.source != DraftSource::kTextMatch &&
      hyp_.ends_with(":<escape>") && t.TextState(&key, &left)) {
    const std::string_view said = rest.substr(0, rest.find("<escape>"));
    if (said.empty() || utterance.find(said) == std::string_view::npos) {
      run->limited = true;
      return true;
    }
  }
  return false;
}

size_t CallGenerator::BuildGuess(const ConstrainedOptions& opt, size_t room) {
  hyp_ = written_;
  CallMatcher s = matcher_;
  GuessCursor at;  // one head slot (the pass's first) before any guess
  const std::string_view utterance = opt.draft_anchored < opt.draft_sources.size()
                                         ? std::string_view(opt.draft_sources[opt.draft_anchored])
                                         : std::string_view();
  const uint32_t g = opt.draft_guessers;
  const size_t lookups = (g & kGuessChain) ? std::max<size_t>(opt.draft_lookups, 1) : 1;
  bool after_word = false;  // the last segment was a word of the utterance that ended a value
  std::string_view word_rest;  // then: the utterance after that word
  // A number an earlier pass wrote that is a whole word of the utterance ("volume:30" for "... at
  // volume 30") has ended like a guessed word: no digit after it, the close rule after it.
  if (uint32_t key = 0, left = 0; (g & kGuessSaidValue) && !matcher_.TextState(&key, &left)) {
    const std::string_view number = NumberSoFar(hyp_);
    const size_t end = number.empty() ? std::string_view::npos : FindValue(utterance, number);
    if (end != std::string_view::npos) {
      after_word = true;
      word_rest = utterance.substr(end);
    }
  }
  // Each lookup tries the ranked candidates in order; the first that guesses a token is kept, and
  // the guess may go on from a new lookup where it stopped.
  for (size_t lookup = 0; lookup < lookups && at.used < room && !s.Done(); ++lookup) {
    RankCandidates(opt, s, utterance, after_word, word_rest);
    bool extended = false, chain = false;
    for (const DraftCandidate& c : candidates_) {
      const std::optional<std::string_view> cont = CandidateText(c, s, utterance, after_word, g);
      if (!cont) continue;
      const size_t batch0 = batch_.size(), guesses0 = guesses_.size(), hyp0 = hyp_.size();
      const GuessCursor at0 = at;
      const GuessRun run = RunCandidate(c, *cont, s, utterance, g, room, &at);
      if (run.tokens == 0) continue;
      if (c.source == DraftSource::kWord && !run.limited && !run.done) {
        // A word is a guess only as a whole value or key: the utterance's word ends where the grammar
        // lets the value end (the closing mark was forced, or a ',' or '}' may follow).
        const bool boundary = run.stop_at >= cont->size() || !WordByte((*cont)[run.stop_at]);
        const bool ended = run.diverged || run.state.Accepts(',') || run.state.Accepts('}');
        if (!boundary || !ended) {
          batch_.resize(batch0);
          guesses_.resize(guesses0);
          guess_sources_.resize(guesses0);
          hyp_.resize(hyp0);
          at = at0;
          continue;
        }
      }
      s = run.state;
      extended = true;
      after_word = c.source == DraftSource::kWord && !AtValue(hyp_, s);  // (a key's word: its value comes next)
      word_rest = after_word && run.stop_at < cont->size() ? cont->substr(run.stop_at) : std::string_view();
      // Look up again where the source ran out or left the grammar, in structure (a guess in free
      // text needs whole-vocabulary heads: it goes on only with its own evidence).
      uint32_t key = 0, left = 0;
      const bool text = run.state.TextState(&key, &left);
      chain = run.at_value || (!run.limited && !run.done && !text);
      // A string's start ("datetime:<escape>", after a key's forced run) is also looked up again:
      // there only strong evidence guesses (an earlier value the utterance says, a digit form).
      if ((g & kGuessStringStart) && !run.limited && !run.done && text && hyp_.ends_with("<escape>")) chain = true;
      break;
    }
    if (!extended || !chain) break;
  }
  return at.slots;
}

}  // namespace fgemma
