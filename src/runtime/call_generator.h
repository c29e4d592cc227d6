// Constrained generation of a FunctionGemma turn, with the two exact speed-ups:
//  - restricted head: when the grammar allows few tokens, only those rows of the tied embedding are
//    multiplied (instead of all 262,144);
//  - jump-forward: when the grammar forces a continuation ("call:", the rest of a unique name, "{",
//    <escape>, "}<end_function_call>"), its canonical tokens are appended without evaluating the head
//    and run through the model together with the next step's input, as one batch.
// Both leave the chosen tokens unchanged: with them off, the same step computes the full head and
// takes the argmax over the same allowed set (a forced token is the only allowed one).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "chat/call_grammar.h"
#include "runtime/draft_lookup.h"
#include "runtime/session.h"
#include "runtime/token_budget.h"
#include "runtime/token_constraint.h"

namespace fgemma {

// One drafted pass as the generator saw it: what was written before it, the guessed tokens with
// their sources, how many were confirmed, and which heads needed the whole vocabulary.
struct DraftPassTrace {
  std::string_view written;               // output text before the pass
  std::span<const int32_t> guesses;       // guessed tokens, in order
  std::span<const DraftSource> sources;   // per guess
  std::span<const uint8_t> full_heads;    // per head (heads[k] verifies guesses[k]; the last gives the next choice)
  size_t batch = 0;                       // positions evaluated (pending + guesses + their forced runs)
  size_t kept = 0;                        // of which kept (the rest were rewound)
  size_t accepted = 0;                    // guesses confirmed
  // Wall time of the pass's parts (ms): building the guess, preparing the heads (allowed sets),
  // the model pass with its heads, reading the heads and rewinding.
  double guess_ms = 0, heads_ms = 0, model_ms = 0, read_ms = 0;
};

// Rules of the draft guesser (ConstrainedOptions::draft_guessers).
enum DraftGuesser : uint32_t {
  kGuessChain = 1,         // look up again where a guess's source ends or leaves the grammar
  kGuessWordsFirst = 2,    // at a value, the utterance's words before earlier calls
  kGuessNamedTool = 4,     // the tool the utterance names before earlier calls' tools
  kGuessValueBreak = 8,    // an earlier call reaching a value looks up again (words first)
  kGuessStringCheck = 16,  // an earlier call's string value only if the utterance holds it
  kGuessClose = 32,        // after what is likely the last value, the call's '}'
  kGuessSaidValue = 64,    // an earlier call's value (number, enum, string) only where the utterance says it
  kGuessTextEnd = 128,     // the utterance's text copied into a string ends before words naming an enum value
  kGuessSlots = 256,       // at a key, the keys whose values the utterance says (an enum value, the one number)
  kGuessLists = 512,       // in an array of enum strings the utterance names none of, the values in schema order
  kGuessDigitForm = 1024,  // in a string, an earlier call's value (a date-time) with the utterance's numbers in its digits
  kGuessStringStart = 2048,  // a guess reaching a string's start looks up again there (said values, digit forms)
  kGuessShortParts = 4096,  // a name's part of two letters ("on") counts half toward the tool the utterance names
  kGuessAll = 8191,
};

struct ConstrainedOptions {
  bool restricted_head = true;
  bool jump_forward = true;
  size_t restricted_max = 8192;  // allowed-set size up to which the head is restricted
  size_t max_tokens = kDefaultMaxTokens;  // hard cap on generated tokens (the grammar's bounds come first)
  // Exact speculative drafts (runtime/draft_lookup.h): each head step also evaluates a run of
  // guessed tokens (with the forced runs they lead to) in the same pass, a head on every guessed
  // position restricted like any step, and keeps the longest prefix the heads confirm plus the
  // head's own choice at the first miss: the output is the same, token for token, in fewer passes.
  // Builds on jump-forward (with jump_forward off there are no drafts).
  bool draft = true;
  // Positions a pass adds after the chosen token: guessed tokens and the forced runs between them
  // (also bounded by Session::max_speculative_batch). 16: since the two-panel VNNI tile, a 16-row
  // pass costs ~3.5x a one-row pass at a call's context, and longer runs save passes (smart-home,
  // 270m q8_0, 2 threads: 5.33 passes a call at 8, 4.58 at 16, p50 -7 %).
  size_t max_draft = 16;
  // Texts drafts are copied from: the first `draft_anchored` are earlier outputs (most recent
  // first), the rest other text (the user's utterance). Must outlive Generate.
  std::span<const std::string> draft_sources;
  size_t draft_anchored = 0;
  // Lookups per pass: where a guess's source ends or departs from the grammar (a value copied from
  // the utterance ends, say), the guess goes on from a new lookup at the text it has reached, up to
  // this many in all (1: one source per pass).
  size_t draft_lookups = 8;
  // The guesser's rules (call_generator_guess.cpp), all on by default; a mask for measuring each.
  uint32_t draft_guessers = kGuessAll;
  // Null in production. Traces and benchmarks see every drafted pass (DraftPassTrace above).
  std::function<void(const DraftPassTrace&)> on_draft_pass;
  // Called with each generated token as it is chosen (streaming, cancellation, budgets); returning
  // false stops generation with a kCancelled status.
  std::function<bool(int32_t)> on_token;
  // Null in production. Timing aids and tests install one to see every token and override the
  // head's choice (runtime/follow_text.h writes a given output with the same work per step).
  class ChoiceHook* choice_hook = nullptr;
};

// What a head step offers a ChoiceHook: the argmax and the allowed set, as the candidate ids when
// the head was restricted, else as a bit mask over the vocabulary.
struct HeadChoice {
  int32_t argmax = -1;
  std::span<const int32_t> candidates;
  const uint64_t* allowed_mask = nullptr;
  bool Allows(int32_t id) const;
};

// Sees the generated tokens and may replace the head's choice by another allowed token; the model
// and the head are evaluated exactly as without it. An error it returns stops generation.
class ChoiceHook {
 public:
  virtual ~ChoiceHook() = default;
  virtual void Start() {}
  virtual Result<int32_t> Choose(const HeadChoice& choice) { return choice.argmax; }
  // Every token appended to the output, chosen by the head or forced by the grammar.
  virtual Status Appended(int32_t id) { return Status::Ok(); }
};

struct ConstrainedStats {
  size_t tokens = 0;            // tokens generated
  size_t head_steps = 0;        // steps that evaluated the head
  size_t restricted_steps = 0;  // of which with a restricted head
  size_t forced_tokens = 0;     // tokens appended by jump-forward (no head)
  size_t head_rows = 0;         // embedding rows multiplied, summed over steps
  size_t model_calls = 0;       // passes over the model (Session::Evaluate calls)
  size_t drafted_tokens = 0;    // guessed tokens verified by a head (forced ones not counted)
  size_t accepted_tokens = 0;   // of which confirmed (each saved a pass)
};

// Allowed-token lists of a grammar's structural states (function names, keys, enum values, numbers,
// punctuation: everything but free text, which ConstraintVocab already shares as bitmasks), kept
// across requests that use the same compiled grammar (FunctionCaller keeps one per tool catalog and
// tool_choice): a warm request searches the vocabulary only in states it has not met before.
struct AllowedCache {
  static constexpr size_t kMaxEntries = 4096;  // states kept (then no new ones are added)
  static constexpr size_t kMaskFrom = 16384;   // larger sets are kept as bitmasks over the vocabulary
  static constexpr size_t kMaxMasks = 64;      // (32 KB each for 262,144 tokens)
  struct Entry {
    std::vector<int32_t> ids;       // small sets
    ConstraintVocab::TextSet mask;  // large ones (e.g. "text or a call" at the start of a turn)
    bool is_mask = false;
  };
  std::unordered_map<std::string, Entry> sets;
  size_t masks = 0;
};

class CallGenerator {
 public:
  // `cache` (optional) must belong to `grammar` and outlive the generator.
  CallGenerator(const ConstraintVocab& vocab, const CallGrammar& grammar, int32_t vocab_size,
                AllowedCache* cache = nullptr);

  // Evaluates `prompt` (appended at the session's position), then generates one constrained turn.
  // `out` receives the generated ids. Fails only on model errors (context exhausted, ...).
  Status Generate(Session& session, std::span<const int32_t> prompt, const ConstrainedOptions& options,
                  std::vector<int32_t>* out, ConstrainedStats* stats);

  bool finished() const { return matcher_.Done(); }

 private:
  // One head of a pass: its grammar state's allowed set, restricted or as a mask.
  struct HeadSlot {
    explicit HeadSlot(const CallGrammar* grammar) : state(grammar) {}
    CallMatcher state;
    std::vector<int32_t> ids;
    std::vector<uint64_t> mask;
    bool restricted = false;
  };
  // The clock of a traced pass (DraftPassTrace's parts): reads no clock when nobody traces.
  class PassTimer {
   public:
    explicit PassTimer(bool on) : on_(on) { Lap(); }
    bool on() const { return on_; }
    void Lap() {
      if (on_ && laps_ < kLaps) marks_[laps_++] = Clock::now();
    }
    double Ms(size_t from, size_t to) const { return on_ ? Between(marks_[from], marks_[to]) : 0; }
    double MsSince(size_t from) const { return on_ ? Between(marks_[from], Clock::now()) : 0; }

   private:
    using Clock = std::chrono::steady_clock;
    static constexpr size_t kLaps = 4;
    static double Between(Clock::time_point a, Clock::time_point b) {
      return std::chrono::duration<double, std::milli>(b - a).count();
    }
    bool on_;
    size_t laps_ = 0;
    Clock::time_point marks_[kLaps];
  };
  // The decode loop's steps (call_generator.cpp): a new turn's state; a token appended to the
  // output (hook, text, on_token), one the grammar forces (fed to it first); the forced run in
  // forced_ appended whole (jump-forward).
  void StartTurn(std::span<const int32_t> prompt, const ConstrainedOptions& opt, std::vector<int32_t>* out);
  Status AppendToken(const ConstrainedOptions& opt, int32_t id, std::vector<int32_t>* out);
  Status AppendForcedToken(const ConstrainedOptions& opt, int32_t id, std::vector<int32_t>* out);
  Status AppendForced(const ConstrainedOptions& opt, std::vector<int32_t>* out, ConstrainedStats* st);
  // One pass over the model (call_generator_pass.cpp): the pending tokens and, when drafting, a
  // guess; its heads are read and the positions they reject rewound. `forced` (jump-forward off):
  // the only token the pass's head may choose.
  Status RunPass(Session& session, const ConstrainedOptions& opt, const int32_t* forced, std::vector<int32_t>* out,
                 ConstrainedStats* st);
  // Fills slot.ids / slot.mask and `head` for a head in slot.state (or allowing `forced` alone).
  Status PrepareHead(HeadSlot& slot, const int32_t* forced, const ConstrainedOptions& opt, const Session& session,
                     HeadRequest* head, ConstrainedStats* st);
  // The head's choice, or the ChoiceHook's (checked against the slot's allowed set).
  Result<int32_t> ChooseToken(const ConstrainedOptions& opt, const HeadSlot& slot, int32_t argmax);
  // Reads the pass's heads in order and keeps what they confirm; *kept: positions of the batch kept.
  Status ReadHeads(Session& session, const ConstrainedOptions& opt, size_t n_slots, std::vector<int32_t>* out,
                   ConstrainedStats* st, size_t* kept);
  // Hands the pass to ConstrainedOptions::on_draft_pass.
  void TracePass(const ConstrainedOptions& opt, size_t n_slots, size_t kept, size_t accepted, const PassTimer& timer);
  // Extends batch_ with guessed tokens and their forced runs (at most `room` positions), adding a
  // head slot after each guess; returns the number of slots (call_generator_guess.cpp).
  size_t BuildGuess(const ConstrainedOptions& opt, size_t room);
  // BuildGuess's steps. Positions of the pass's batch taken so far and head slots filled (the
  // first slot is the pass's own head).
  struct GuessCursor {
    size_t used = 0, slots = 1;
  };
  // One candidate fed through the grammar: how far it went and why it stopped.
  struct GuessRun {
    CallMatcher state;                        // the grammar state after it
    size_t tokens = 0;                        // tokens guessed (forced runs not counted)
    size_t stop_at = std::string_view::npos;  // where the candidate stopped agreeing (npos: it ran out)
    bool diverged = false;                    // a forced run departed from its text
    bool limited = false;                     // the batch's room, the candidate's worth or a rule cut it
    bool done = false;                        // the turn's grammar ended
    bool at_value = false;                    // it stopped at a value or a key, for a new lookup there
  };
  // candidates_ := the lookup's continuations of hyp_ in state `s`, in the order the guesser's
  // rules rank them (the named tool, the close, the said keys, an enum list's next items).
  void RankCandidates(const ConstrainedOptions& opt, const CallMatcher& s, std::string_view utterance, bool after_word,
                      std::string_view word_rest);
  // The text `c` is guessed as at hyp_ (a lowercase word, a copied text cut where its value ends:
  // text_guess_), or nullopt where a rule rules it out (its first byte, a word that would not be
  // whole, a value the utterance does not say).
  std::optional<std::string_view> CandidateText(const DraftCandidate& c, const CallMatcher& s, std::string_view utterance,
                                                bool after_word, uint32_t guessers);
  // Appends `cont`'s tokens (and the forced runs after each) to batch_ and hyp_ while the grammar
  // takes them and the rules let the candidate go on, a head slot after each guessed token.
  GuessRun RunCandidate(const DraftCandidate& c, std::string_view cont, const CallMatcher& s, std::string_view utterance,
                        uint32_t guessers, size_t room, GuessCursor* at);
  // After a guessed token: the forced runs, whole, as the generator appends them; the candidate
  // goes on only where it agrees with their text (*cursor moves past it). False when the batch
  // ends inside a run.
  bool AppendForcedRuns(std::string_view cont, size_t room, GuessCursor* at, GuessRun* run, size_t* cursor, bool* ran);
  // The rules that end a run after a guessed token's head (`rest`: the candidate's text not yet
  // guessed): a departed source, a value or a key reached (a new lookup goes on there), an earlier
  // call's string the utterance does not hold.
  bool StopsAfterHead(const DraftCandidate& c, std::string_view rest, std::string_view utterance, uint32_t guessers,
                      GuessRun* run) const;
  // The tool whose name the utterance (`text`) mentions best, "" when none stands out (`guessers`:
  // kGuessShortParts weighs short parts less).
  void NameTool(std::string_view text, uint32_t guessers);
  // *ids and *text := the grammar's allowed tokens in state `m`, through the structural-state cache.
  void GrammarAllowed(const CallMatcher& m, std::vector<int32_t>* ids, const ConstraintVocab::TextSet** text);
  const ConstraintVocab& vocab_;
  const CallGrammar& grammar_;
  CallMatcher matcher_;
  ConstraintVocab::Scratch scratch_;
  std::vector<int32_t> forced_;            // the decode loop's forced run (Generate)
  std::vector<int32_t> confirmed_forced_;  // ReadHeads: the forced runs after a confirmed guess
  std::vector<int32_t> pending_;
  std::vector<uint64_t> mask_;
  AllowedCache* cache_ = nullptr;
  std::string state_key_;
  bool drafting_ = false;  // this turn guesses (draft, jump-forward and max_draft > 0: StartTurn)
  // The pass's heads and batch; drafting: the text written so far and the guessed tokens.
  std::string written_;
  std::vector<HeadSlot> slots_;
  std::vector<HeadRequest> heads_;
  std::vector<int32_t> batch_;
  std::vector<int32_t> guesses_;      // per slot after the first: the guessed token it verifies
  std::vector<int32_t> draft_forced_;
  std::vector<DraftCandidate> candidates_;
  std::vector<DraftSource> guess_sources_;  // per guessed token
  std::vector<uint8_t> full_heads_;         // per head of the pass (traces)
  std::string written_before_;               // traces: written_ before the pass
  std::string hyp_;                         // drafting: the text the pass's batch reaches
  std::string name_guess_;                  // the tool the utterance names, as a candidate's text
  std::string named_tool_;                  // that tool's name ("" when the utterance names none)
  std::vector<std::string> enum_values_;    // every enum value of the catalog, lowercase, once
  std::string text_guess_;                  // a copied text cut where its value likely ends, then <escape>
  std::vector<std::string> slot_guesses_;   // at a key: the said keys and values from each key on (SlotGuesses)
  // Fills slot_guesses_ for the function being called in `hyp` (empty when none is).
  void SlotGuesses(std::string_view hyp, std::string_view utterance);
  std::string form_guess_;                  // in a string: an earlier value in the utterance's numbers (FormGuess)
  // Fills form_guess_ where hyp_ is inside a string value (or at its start) and an earlier output
  // (`earlier`) has a value of the same key in a digit form ("2026-06-27T17:45:00"): that value with
  // the utterance's numbers in its digit runs (FillDigits), from what is written on, closed with
  // <escape>; empty when none fills.
  void FormGuess(std::span<const std::string> earlier, std::string_view utterance);
  std::string list_guess_;                  // in an array of enum values: the items to come (ListGuess)
  // Fills list_guess_ where `hyp` is inside an array of enum strings (after '[', an item or its ','):
  // the values after the last item in the schema's order, or from the first; empty elsewhere, or
  // when the utterance names one of the values (its words are the better guess then).
  void ListGuess(std::string_view hyp, std::string_view utterance);
};

}  // namespace fgemma
