// The grammar of FunctionGemma calls, compiled from a tool catalog, and an incremental matcher.
//
//   turn  := text END_OF_TURN                                   (tool_choice auto / none)
//          | call+ (START_FUNCTION_RESPONSE | END_OF_TURN | EOS)  (auto / required / named)
//   call  := START_FUNCTION_CALL "call:" NAME "{" args "}" END_FUNCTION_CALL
//   args  := "" | KEY ":" value ("," KEY ":" value)*   (declared keys, each once, required ones all)
//   value := ESCAPE utf8-text ESCAPE | ESCAPE enum-value ESCAPE | integer | number | true | false
//          | literal (a numeric or boolean enum value) | "[" (value ("," value)*)? "]" | "{" args "}"
//
// The schema's keywords narrow each value while it is written (docs/tool-schemas.md): enums of any
// scalar, numeric ranges and multipleOf (a ranged number keeps its value prefix and admits a digit
// only if some completion lands in range, on the step), string lengths in characters, `pattern`
// (a byte automaton), and array item counts.
//
// Symbols are bytes (0-255) of the decoded text plus the control tokens (kSym*). Every construct
// has a bound (string bytes, number characters, array items, calls, text bytes), so every path
// reaches an end in a bounded number of symbols: constrained decoding always terminates with a call
// that parses and validates, even on a model with random weights.
//
// A union (anyOf, a type list) is matched by running its branches side by side as threads (each a
// stack of frames) from the value's first symbol: a branch that refuses a symbol ends, threads that
// become equal (the value ended) merge, so no branch is chosen before the text tells them apart.
// The schema parser bounds how many can be open at once (kMaxOpenBranches).
//
// The matcher's state is a small fixed-size value: copying it is how the token-mask search and the
// jump-forward probe explore continuations, and Feed() never allocates.
#pragma once

#include <array>
#include <cstdint>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "chat/request.h"
#include "chat/schema_number.h"
#include "chat/schema_pattern.h"
#include "util/status.h"

namespace fgemma {

// Control-token symbols (after the 256 byte values).
enum : int {
  kSymStartCall = 256,     // <start_function_call>
  kSymEndCall = 257,       // <end_function_call>
  kSymEscape = 258,        // <escape>
  kSymStartResponse = 259, // <start_function_response>
  kSymEndOfTurn = 260,     // <end_of_turn>
  kSymEos = 261,           // <eos>
  kNumSymbols = 262,
};

enum class ToolChoiceMode { kAuto, kRequired, kNone, kFunction };

struct ToolChoice {
  ToolChoiceMode mode = ToolChoiceMode::kAuto;
  std::string function;  // kFunction: the one function to call
};
// Parses OpenAI's tool_choice: "auto" | "required" | "none" | {"type":"function","function":{"name":..}}
// (also a bare function name). Unknown tools are an error naming the name.
Result<ToolChoice> ParseToolChoice(const Json& value, const std::vector<Tool>& tools);
Result<ToolChoice> ParseToolChoice(const OrderedJson& value, const std::vector<Tool>& tools);
// The `tool_choice` member of an OpenAI chat-completions body (auto when absent), read in place:
// what the server and the C API's fgemma_caller_call_openai both use.
Result<ToolChoice> ToolChoiceOfBody(const OrderedJson& body, const std::vector<Tool>& tools);

struct GrammarLimits {
  uint32_t max_string_bytes = 200;
  uint32_t max_array_items = 8;
  uint32_t max_calls = 4;
  uint32_t max_text_bytes = 1024;
  uint32_t max_free_keys = 8;        // objects without declared properties
  uint32_t max_free_key_bytes = 32;
};

class CallGrammar {
 public:
  static Result<CallGrammar> Compile(const std::vector<Tool>& tools, const ToolChoice& choice,
                                     const GrammarLimits& limits = {});

  // kLiteral: unquoted values from a list (numeric and boolean enums), in `choices`.
  // kUnion: anyOf / a type list; `children` are its branches (none a union), run side by side.
  enum class Kind : uint8_t { kString, kEnum, kInteger, kNumber, kBoolean, kArray, kObject, kAny, kLiteral, kUnion };
  struct Node {
    Kind kind = Kind::kAny;
    // kInteger / kNumber with bounds or a step: values in [lo, hi] (units of 1e-15) on multiples of
    // `step`, written without an exponent in at most 18 (integer) or 15 (number) digits.
    bool ranged = false;
    SchemaUnits lo = -kUnitsClamp, hi = kUnitsClamp, step = 1;
    // kString: length bounds in characters, and the pattern automaton (null: none).
    uint32_t min_chars = 0, max_chars = UINT32_MAX;
    std::shared_ptr<const PatternDfa> pattern;
    // A pattern beside a length bound: PatternLengthTable(pattern, length_width - 1).
    std::shared_ptr<const std::vector<uint16_t>> pattern_lengths;
    uint32_t length_width = 0;
    // Also admits `null` (the schema's nullable, or a type list / anyOf with "null").
    bool nullable = false;
    // kArray: item counts (the grammar's cap applies below max_items).
    uint32_t min_items = 0, max_items = UINT32_MAX;
    std::vector<std::string> choices;  // kEnum: values; kObject: property names; both sorted bytewise
    std::vector<std::string> listed;   // kEnum: the values in the schema's order (drafts guess lists by it)
    std::vector<int> children;         // kObject: node per sorted property; kArray: {item} (-1: any); kUnion: branches
    uint64_t required_mask = 0;        // kObject: bit i = choices[i] is required
    bool free_keys = false;            // kObject without declared properties: any identifier keys
  };

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<std::string>& function_names() const { return function_names_; }  // sorted
  int function_params(size_t i) const { return function_params_[i]; }
  const ToolChoice& choice() const { return choice_; }
  const GrammarLimits& limits() const { return limits_; }
  int forced_function() const { return forced_function_; }  // index into function_names, or -1

 private:
  Result<int> AddNode(const Schema* schema, int depth);
  std::vector<Node> nodes_;
  std::vector<std::string> function_names_;
  std::vector<int> function_params_;
  ToolChoice choice_;
  GrammarLimits limits_;
  int forced_function_ = -1;
};

class CallMatcher {
 public:
  explicit CallMatcher(const CallGrammar* grammar);
  CallMatcher(const CallMatcher& other) { CopyFrom(other); }
  CallMatcher& operator=(const CallMatcher& other) {
    CopyFrom(other);
    return *this;
  }
  // Copies only the live frames: the state is copied once per byte in the token-mask search.
  void CopyFrom(const CallMatcher& other);

  // Consumes one symbol; false if the grammar does not allow it here (the state is then unusable:
  // callers probe on a copy).
  bool Feed(int symbol);
  // Consumes bytes; false (state unspecified) on the first refusal.
  bool FeedBytes(std::string_view bytes);
  bool Accepts(int symbol) const {
    CallMatcher copy = *this;
    return copy.Feed(symbol);
  }
  // True once the turn is complete (nothing more may follow).
  bool Done() const;
  // When the innermost construct is free text (a string value's body or a plain-text answer),
  // returns true with `key` describing the text state (UTF-8 and "<escape>" progress) and `room`
  // the bytes still allowed: then which ordinary tokens are accepted depends on nothing else.
  bool TextState(uint32_t* key, uint32_t* room) const;
  // At the turn's start where a plain-text answer may begin (tool_choice auto or none): true with
  // `key` and `room` those TextState gives once the answer has begun, before its first byte. An
  // ordinary token is accepted here exactly when that text accepts it (its first byte starts the
  // answer), so the start shares the text's set of tokens instead of searching the vocabulary.
  bool TextStart(uint32_t* key, uint32_t* room) const;
  // Whether free text in the state TextState (or TextStart) reports as `key`, with room for them,
  // accepts `bytes`: there nothing but these rules (UTF-8, no NUL, no "<escape>" spelled out)
  // decides an ordinary token, so its acceptance is this test's.
  static bool TextAccepts(uint32_t key, std::string_view bytes);
  // Appends a byte string that identifies the matcher's state within its grammar (every frame's
  // fields, the call count): equal keys accept exactly the same continuations.
  void StateKey(std::string* out) const;
  // Whether the innermost object may still take a declared property that sorts after every one it
  // has (a writer of sorted keys has one to come); true for objects of free keys, false outside
  // objects.
  bool LaterKeyOpen() const;
  // Calls completed so far, and whether the turn went the plain-text way.
  uint32_t calls() const { return calls_; }
  bool is_text() const { return text_; }

  static constexpr int kMaxDepth = 16;
  // Threads alive at once: the open branches, and as many again while one symbol is being fed
  // (threads forked for it beside those not yet fed).
  static constexpr int kMaxThreads = 2 * kMaxOpenBranches;
  // TextState reports a length-bounded string as free text only while this many bytes and
  // characters remain on either side of its bounds (no vocabulary token is longer).
  static constexpr uint32_t kTextMargin = 64;

 private:
  enum class FrameKind : uint8_t { kTop, kObject, kString, kEnum, kNumber, kBoolean, kArray, kAny, kFreeKey, kRangedNumber, kLiteral, kNullable, kUnion };
  struct Frame {
    FrameKind kind = FrameKind::kTop;
    uint8_t phase = 0;
    uint8_t utf8_need = 0;      // string/text: continuation bytes still expected
    uint8_t utf8_lo = 0x80;     // string/text: range of the next continuation byte
    uint8_t utf8_hi = 0xBF;
    uint8_t escape_seen = 0;    // string/text: bytes of "<escape>" matched as plain text
    bool integer = false;       // number: integers only
    int16_t node = 0;           // grammar node
    uint16_t lo = 0, hi = 0;    // choice matching: candidate range in a sorted list
    uint16_t depth = 0;         // choice matching: bytes matched so far
    uint32_t count = 0;         // string bytes / number chars / array items / free keys
    uint64_t seen = 0;          // object: properties emitted; string: characters; ranged number: digits as an integer
    // Ranged numbers also use lo (1: negative), hi (digits written) and depth (fractional digits);
    // a string with a pattern keeps its automaton state in lo.
  };
  // kAcceptPop: consumed, and the frame is complete. kPopAndRefeed: the frame ended just before
  // this symbol (a number or boolean has no closing mark). kRefeed: the frame changed shape or
  // pushed a child; dispatch the same symbol again to the new innermost frame.
  // kFork: a union frame saw its value's first symbol; the thread splits into its branches.
  enum class Step { kAccept, kAcceptPop, kReject, kPopAndRefeed, kRefeed, kFork };

  static uint32_t TextKey(const Frame& f);
  Step FeedFrame(Frame& f, int symbol);
  Step FeedTop(Frame& f, int symbol);
  Step FeedObject(Frame& f, int symbol);
  Step FeedString(Frame& f, int symbol);
  Step FeedEnum(Frame& f, int symbol);
  Step FeedNumber(Frame& f, int symbol);
  Step FeedBoolean(Frame& f, int symbol);
  Step FeedArray(Frame& f, int symbol);
  Step FeedAny(Frame& f, int symbol);
  Step FeedFreeKey(Frame& f, int symbol);
  Step FeedRangedNumber(Frame& f, int symbol);
  Step FeedLiteral(Frame& f, int symbol);
  Step FeedNullable(Frame& f, int symbol);
  bool PushValue(int node);
  // Feeds one thread; forks append threads (fed at once). False: the thread refused the symbol.
  bool FeedThread(int t, int symbol);
  // Drops refused threads (top -1) and threads equal to an earlier one.
  void CompactThreads();
  bool SameThread(int a, int b) const;
  Frame* Frames(int t) {
    return t == 0 ? stack_.data() : std::launder(reinterpret_cast<Frame*>(extra_)) + static_cast<size_t>(t - 1) * kMaxDepth;
  }
  const Frame* Frames(int t) const {
    return t == 0 ? stack_.data() : std::launder(reinterpret_cast<const Frame*>(extra_)) + static_cast<size_t>(t - 1) * kMaxDepth;
  }
  // The frame of a value of `node` (with allow_null, one that first decides between null and it).
  Frame ValueFrame(int node, bool allow_null) const;
  bool Push(const Frame& f);
  // Narrows [lo, hi) of `names` to those whose byte `depth` is `b`.
  static bool NarrowChoice(const std::vector<std::string>& names, Frame& f, uint8_t b);
  // Whether byte `s` and the rest of the character it starts stay within `cap` bytes.
  static bool FitsWholeCharacter(const Frame& f, int s, uint32_t cap);
  // Byte of plain UTF-8 text; tracks validity and forbids spelling "<escape>".
  static bool TextByte(Frame& f, uint8_t b);
  static bool LengthsReachable(const CallGrammar::Node& n, const Frame& f, uint16_t next, uint64_t chars, uint32_t cap);

  const CallGrammar* g_;
  std::array<Frame, kMaxDepth> stack_{};  // thread 0
  // Threads 1.. of a union being matched: raw storage, filled by memcpy of frames (left
  // uninitialized so that a copy of a matcher outside unions costs what it did before).
  alignas(Frame) unsigned char extra_[static_cast<size_t>(kMaxThreads - 1) * kMaxDepth * sizeof(Frame)];
  std::array<int8_t, kMaxThreads> tops_{};  // per thread: index of its innermost frame (-1: refused)
  int threads_ = 1;
  // While a thread is fed: its frames and innermost index.
  Frame* cur_ = nullptr;
  int top_ = 0;
  uint32_t calls_ = 0;
  bool text_ = false;
};

}  // namespace fgemma
