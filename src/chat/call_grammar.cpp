#include "chat/call_grammar.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <numeric>

#include "chat/py_text.h"

namespace fgemma {
namespace {

constexpr std::string_view kCallLiteral = "call:";
constexpr std::string_view kEscapeText = "<escape>";
const std::vector<std::string> kBooleans = {"false", "true"};

// Node indices reserved by Compile: any value, free-form object, array of anything.
constexpr int kAnyNode = 0, kFreeObjectNode = 1, kAnyArrayNode = 2, kNullNode = 3;

// Top-level phases.
enum : uint8_t { kTopStart, kTopText, kTopCallLiteral, kTopName, kTopAfterArgs, kTopAfterCall, kTopDone };
// Object phases.
enum : uint8_t { kObjExpectOpen, kObjKeyOrClose, kObjKey, kObjAfterValue, kObjKeyStart };
// Number phases.
enum : uint8_t { kNumStart, kNumSign, kNumZero, kNumInt, kNumFrac0, kNumFrac, kNumExp0, kNumExpSign, kNumExp };

bool IsDigit(int s) { return s >= '0' && s <= '9'; }
bool IsKeyByte(int s) {
  return (s >= 'a' && s <= 'z') || (s >= 'A' && s <= 'Z') || IsDigit(s) || s == '_' || s == '-' || s == '.';
}

// One reading for both JSON flavours (a request body keeps key order; a C string argument need not).
template <typename JsonT>
Result<ToolChoice> ToolChoiceFrom(const JsonT& v, const std::vector<Tool>& tools) {
  ToolChoice c;
  std::string name;
  if (v.is_null()) return c;
  if (v.is_string()) {
    const std::string s = v.template get<std::string>();
    if (s == "auto") return c;
    if (s == "required" || s == "any") {
      c.mode = ToolChoiceMode::kRequired;
      return c;
    }
    if (s == "none") {
      c.mode = ToolChoiceMode::kNone;
      return c;
    }
    name = s;
  } else if (v.is_object()) {
    auto fn = v.find("function");
    if (fn == v.end() || !fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string())
      return InvalidArgument("tool_choice: expected {\"type\":\"function\",\"function\":{\"name\":...}}");
    name = (*fn)["name"].template get<std::string>();
  } else {
    return InvalidArgument("tool_choice: expected \"auto\", \"required\", \"none\" or a function object");
  }
  const bool known = std::any_of(tools.begin(), tools.end(), [&](const Tool& t) { return t.name == name; });
  if (!known) return InvalidArgument("tool_choice: unknown tool '" + name + "' (not in tools)");
  c.mode = ToolChoiceMode::kFunction;
  c.function = name;
  return c;
}

}  // namespace

Result<ToolChoice> ParseToolChoice(const Json& value, const std::vector<Tool>& tools) { return ToolChoiceFrom(value, tools); }

Result<ToolChoice> ParseToolChoice(const OrderedJson& value, const std::vector<Tool>& tools) {
  return ToolChoiceFrom(value, tools);
}

Result<ToolChoice> ToolChoiceOfBody(const OrderedJson& body, const std::vector<Tool>& tools) {
  if (!body.is_object()) return ToolChoice{};
  auto it = body.find("tool_choice");
  if (it == body.end()) return ToolChoice{};
  return ToolChoiceFrom(*it, tools);
}

namespace {

// The digits a ranged value may have in all, and after the point.
constexpr int kRangedIntegerDigits = 18, kRangedNumberDigits = 15, kFracDigits = 15;

// Whether [a, b] (magnitudes in units, the sign given apart) holds a value in the node's range, on
// its step and on `grid`.
bool HoldsValue(const CallGrammar::Node& n, bool neg, SchemaUnits a, SchemaUnits b, SchemaUnits grid) {
  SchemaUnits lo = neg ? -b : a, hi = neg ? -a : b;
  lo = std::max(lo, n.lo);
  hi = std::min(hi, n.hi);
  if (lo > hi) return false;
  const SchemaUnits g = LcmUnits(grid, n.step);
  if (g == 0) return lo <= 0 && 0 <= hi;  // only 0 is a multiple of so large a step
  return HoldsMultiple(lo, hi, g);
}

// Whether a ranged value written so far (sign, its `digits` digits as the integer m, `frac` of them
// after the point) can still be completed within the node's range: each count of digits still to
// come covers an interval of values, checked in closed form (no digit-by-digit search).
bool RangeReachable(const CallGrammar::Node& n, bool neg, uint64_t m, int digits, int frac, bool in_frac) {
  const bool integer = n.kind == CallGrammar::Kind::kInteger;
  const int total = integer ? kRangedIntegerDigits : kRangedNumberDigits;
  const SchemaUnits mu = static_cast<SchemaUnits>(m);
  if (in_frac) {
    const int r = std::min(kFracDigits - frac, total - digits);
    if (frac == 0 && r <= 0) return false;  // a point needs a digit after it
    const SchemaUnits unit = Pow10Units(kUnitDigits - frac);
    return HoldsValue(n, neg, mu * unit, (mu + 1) * unit - Pow10Units(kUnitDigits - frac - r), Pow10Units(kUnitDigits - frac - r));
  }
  const int more = m == 0 ? 0 : total - digits;  // a leading 0 takes no more integer digits
  for (int j = 0; j <= more; ++j) {
    const int f = integer ? 0 : std::min(kFracDigits, total - digits - j);
    const SchemaUnits scale = Pow10Units(j + kUnitDigits);
    if (HoldsValue(n, neg, mu * scale, (mu + 1) * scale - Pow10Units(kUnitDigits - f), Pow10Units(kUnitDigits - f))) return true;
  }
  return false;
}

bool RangedValueOk(const CallGrammar::Node& n, bool neg, uint64_t m, int frac) {
  SchemaUnits v = static_cast<SchemaUnits>(m) * Pow10Units(kUnitDigits - frac);
  if (neg) v = -v;
  return v >= n.lo && v <= n.hi && v % n.step == 0;
}

// The text a literal (numeric or boolean enum value) is written as: what the template prints and
// the parser reads back to the same JSON value.
std::string LiteralText(const Json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_float()) return py::FloatRepr(v.get<double>());  // as the prompt shows it: 2.0, 1e-05
  return v.dump();
}

// Integer, number and boolean nodes: plain, ranged, or a literal list (enum / const).
Status ScalarNode(const Schema& schema, CallGrammar::Node* n) {
  using Kind = CallGrammar::Kind;
  n->kind = schema.type == SchemaType::kInteger ? Kind::kInteger : schema.type == SchemaType::kNumber ? Kind::kNumber : Kind::kBoolean;
  if (!schema.enum_values.empty()) {
    n->kind = Kind::kLiteral;
    for (const Json& e : schema.enum_values) {
      std::string text = LiteralText(e);
      if (std::find(n->listed.begin(), n->listed.end(), text) == n->listed.end()) n->listed.push_back(std::move(text));
    }
    n->choices = n->listed;
    std::sort(n->choices.begin(), n->choices.end());
    return Status::Ok();
  }
  if (n->kind == Kind::kBoolean || (!schema.minimum && !schema.maximum && schema.multiple_of.empty())) return Status::Ok();
  n->ranged = true;
  if (schema.minimum) {
    const std::string& d = schema.minimum->decimal;
    n->lo = schema.minimum->exclusive ? DecimalToUnits(d, Rounding::kFloor) + 1 : DecimalToUnits(d, Rounding::kCeil);
  }
  if (schema.maximum) {
    const std::string& d = schema.maximum->decimal;
    n->hi = schema.maximum->exclusive ? DecimalToUnits(d, Rounding::kCeil) - 1 : DecimalToUnits(d, Rounding::kFloor);
  }
  const SchemaUnits whole = Pow10Units(kUnitDigits);
  n->step = n->kind == Kind::kInteger ? whole : 1;
  if (!schema.multiple_of.empty()) {
    n->step = LcmUnits(n->step, DecimalToUnits(schema.multiple_of, Rounding::kFloor));
    if (n->step == 0) return Unsupported("multipleOf " + schema.multiple_of + " is too large");
  }
  for (uint64_t d = 0; d < 10; ++d) {
    if (RangeReachable(*n, false, d, 1, 0, false) || RangeReachable(*n, true, d, 1, 0, false)) return Status::Ok();
  }
  return InvalidArgument(std::string("minimum, maximum and multipleOf leave no ") + SchemaTypeName(schema.type) + " of at most " +
                         std::to_string(n->kind == Kind::kInteger ? kRangedIntegerDigits : kRangedNumberDigits) + " digits");
}

}  // namespace

Result<int> CallGrammar::AddNode(const Schema* schema, int depth) {
  if (depth > CallMatcher::kMaxDepth - 4) return InvalidArgument("parameter schema is nested too deeply for constrained decoding");
  Node n;
  if (schema->IsUnion()) {
    n.kind = Kind::kUnion;
    for (const Schema& branch : schema->any_of) {
      FGEMMA_TRY(int child, AddNode(&branch, depth));
      n.children.push_back(child);
    }
    n.nullable = schema->nullable;
    nodes_.push_back(std::move(n));
    return static_cast<int>(nodes_.size() - 1);
  }
  switch (schema->type) {
    case SchemaType::kString:
      if (!schema->enum_values.empty()) {
        n.kind = Kind::kEnum;
        for (const Json& e : schema->enum_values) {
          if (!e.is_string()) return InvalidArgument("enum value " + e.dump() + " of a string parameter is not a string");
          const std::string v = e.get<std::string>();
          if (v.find(kEscapeText) != std::string::npos) return InvalidArgument("enum value contains <escape>");
          if (std::find(n.listed.begin(), n.listed.end(), v) == n.listed.end()) n.listed.push_back(v);
        }
        n.choices = n.listed;  // the same values, sorted for the matcher
        std::sort(n.choices.begin(), n.choices.end());
      } else {
        n.kind = Kind::kString;
        n.min_chars = schema->min_length;
        n.max_chars = schema->max_length.value_or(UINT32_MAX);
        n.pattern = schema->pattern;
        const uint32_t cap = limits_.max_string_bytes;
        if (n.min_chars > cap)
          return Unsupported("minLength " + std::to_string(n.min_chars) + " is above the " + std::to_string(cap) + " bytes a string may hold");
        if (n.pattern && n.pattern->to_accept[n.pattern->start] > cap)
          return Unsupported("the shortest string matching its " + schema->pattern_keyword + " is longer than the " +
                             std::to_string(cap) + " bytes a string may hold");
        if (n.pattern && (n.min_chars > 0 || n.max_chars != UINT32_MAX)) {
          n.length_width = std::min(n.max_chars, cap) + 1;
          n.pattern_lengths = std::make_shared<const std::vector<uint16_t>>(PatternLengthTable(*n.pattern, n.length_width - 1));
          const uint16_t* start = n.pattern_lengths->data() + static_cast<size_t>(n.pattern->start) * n.length_width;
          bool any = false;
          for (uint32_t k = n.min_chars; k < n.length_width && !any; ++k) any = start[k] <= cap;
          if (!any)
            return Unsupported("no string of at most " + std::to_string(cap) + " bytes matches its " + schema->pattern_keyword +
                               " within minLength and maxLength");
        }
      }
      break;
    case SchemaType::kInteger:
    case SchemaType::kNumber:
    case SchemaType::kBoolean:
      FGEMMA_RETURN_IF_ERROR(ScalarNode(*schema, &n));
      break;
    case SchemaType::kArray: {
      int item = kAnyNode;
      if (schema->items) {
        FGEMMA_TRY(item, AddNode(schema->items.get(), depth + 1));
      }
      n.kind = Kind::kArray;
      n.children = {item};
      if (schema->min_items > 64) return Unsupported("minItems " + std::to_string(schema->min_items) + " is above 64, the most items a call may hold");
      n.min_items = schema->min_items;
      n.max_items = schema->max_items.value_or(UINT32_MAX);
      break;
    }
    case SchemaType::kObject: {
      if (!schema->has_properties && !schema->nullable) return kFreeObjectNode;
      if (!schema->has_properties) {
        n = nodes_[kFreeObjectNode];
        break;
      }
      if (schema->properties.size() > 64) return InvalidArgument("object with more than 64 properties");
      n.kind = Kind::kObject;
      std::vector<size_t> order(schema->properties.size());
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(),
                [&](size_t a, size_t b) { return schema->properties[a].name < schema->properties[b].name; });
      for (size_t i : order) {
        const SchemaProperty& p = schema->properties[i];
        if (!n.choices.empty() && n.choices.back() == p.name) return InvalidArgument("duplicate property '" + p.name + "'");
        FGEMMA_TRY(int child, AddNode(&p.schema, depth + 1));
        if (std::find(schema->required.begin(), schema->required.end(), p.name) != schema->required.end())
          n.required_mask |= 1ull << n.choices.size();
        n.choices.push_back(p.name);
        n.children.push_back(child);
      }
      break;
    }
  }
  n.nullable = schema->nullable;
  nodes_.push_back(std::move(n));
  return static_cast<int>(nodes_.size() - 1);
}

Result<CallGrammar> CallGrammar::Compile(const std::vector<Tool>& tools, const ToolChoice& choice,
                                         const GrammarLimits& limits) {
  CallGrammar g;
  g.choice_ = choice;
  g.limits_ = limits;
  g.nodes_.resize(4);
  g.nodes_[kNullNode].kind = Kind::kLiteral;  // `null`, for nullable values
  g.nodes_[kNullNode].choices = {"null"};
  g.nodes_[kAnyNode].kind = Kind::kAny;
  g.nodes_[kFreeObjectNode].kind = Kind::kObject;
  g.nodes_[kFreeObjectNode].free_keys = true;
  g.nodes_[kAnyArrayNode].kind = Kind::kArray;
  g.nodes_[kAnyArrayNode].children = {kAnyNode};

  std::vector<size_t> order(tools.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tools[a].name < tools[b].name; });
  for (size_t i : order) {
    const Tool& t = tools[i];
    if (t.name.empty()) return InvalidArgument("tools: a function has an empty name");
    if (!g.function_names_.empty() && g.function_names_.back() == t.name)
      return InvalidArgument("tools: function '" + t.name + "' is declared twice");
    auto node = g.AddNode(&t.parameters, 0);
    if (!node.ok()) return node.status().WithContext("tools: function '" + t.name + "'");
    g.function_names_.push_back(t.name);
    g.function_params_.push_back(node.value());
  }
  if (g.function_names_.size() > 65535) return InvalidArgument("tools: too many functions");
  if (choice.mode == ToolChoiceMode::kRequired && tools.empty())
    return InvalidArgument("tool_choice 'required' needs at least one tool");
  if (choice.mode == ToolChoiceMode::kFunction) {
    auto it = std::find(g.function_names_.begin(), g.function_names_.end(), choice.function);
    if (it == g.function_names_.end()) return InvalidArgument("tool_choice: unknown tool '" + choice.function + "'");
    g.forced_function_ = static_cast<int>(it - g.function_names_.begin());
  }
  if (choice.mode == ToolChoiceMode::kAuto && tools.empty()) g.choice_.mode = ToolChoiceMode::kNone;
  return g;
}

// ---------------------------------------------------------------------------------------------

CallMatcher::CallMatcher(const CallGrammar* grammar) : g_(grammar) {
  stack_[0] = Frame{};
  stack_[0].kind = FrameKind::kTop;
  stack_[0].phase = kTopStart;
}

void CallMatcher::CopyFrom(const CallMatcher& o) {
  g_ = o.g_;
  calls_ = o.calls_;
  text_ = o.text_;
  threads_ = o.threads_;
  for (int t = 0; t < threads_; ++t) {
    tops_[static_cast<size_t>(t)] = o.tops_[static_cast<size_t>(t)];
    std::memcpy(static_cast<void*>(Frames(t)), o.Frames(t), static_cast<size_t>(o.tops_[static_cast<size_t>(t)] + 1) * sizeof(Frame));
  }
}

bool CallMatcher::TextState(uint32_t* key, uint32_t* room) const {
  if (threads_ != 1) return false;  // which bytes follow depends on every branch still open
  const Frame& f = stack_[static_cast<size_t>(tops_[0])];
  uint32_t cap = 0;
  uint32_t reserve = 0;  // bytes kept for the characters minLength still asks for
  if (f.kind == FrameKind::kString && f.phase == 1) {
    cap = g_->limits().max_string_bytes;
    const CallGrammar::Node& n = g_->nodes()[static_cast<size_t>(f.node)];
    if (n.pattern) return false;  // which bytes follow depends on the automaton's state
    if (n.min_chars > f.seen) reserve = n.min_chars - static_cast<uint32_t>(f.seen);
    const bool far_from_max = n.max_chars == UINT32_MAX || n.max_chars - f.seen >= kTextMargin;
    if (!far_from_max || (reserve > 0 && (f.count + reserve >= cap || cap - f.count - reserve < kTextMargin))) return false;
  } else if (f.kind == FrameKind::kTop && f.phase == kTopText) {
    cap = g_->limits().max_text_bytes;
  } else {
    return false;
  }
  *room = f.count + reserve >= cap ? 0 : cap - f.count - reserve;
  *key = TextKey(f);
  return true;
}

uint32_t CallMatcher::TextKey(const Frame& f) {
  return static_cast<uint32_t>(f.utf8_need) | static_cast<uint32_t>(f.utf8_lo) << 8 |
         static_cast<uint32_t>(f.utf8_hi) << 16 | static_cast<uint32_t>(f.escape_seen) << 24;
}

bool CallMatcher::TextAccepts(uint32_t key, std::string_view bytes) {
  Frame f;
  f.utf8_need = static_cast<uint8_t>(key);
  f.utf8_lo = static_cast<uint8_t>(key >> 8);
  f.utf8_hi = static_cast<uint8_t>(key >> 16);
  f.escape_seen = static_cast<uint8_t>(key >> 24);
  for (const char c : bytes) {
    if (!TextByte(f, static_cast<uint8_t>(c))) return false;
  }
  return true;
}

bool CallMatcher::TextStart(uint32_t* key, uint32_t* room) const {
  if (threads_ != 1) return false;
  const Frame& f = stack_[static_cast<size_t>(tops_[0])];
  const ToolChoiceMode mode = g_->choice().mode;
  if (f.kind != FrameKind::kTop || f.phase != kTopStart || (mode != ToolChoiceMode::kAuto && mode != ToolChoiceMode::kNone))
    return false;
  // FeedTop turns the frame into the text (kTopText, its fields untouched) and feeds it the byte.
  const uint32_t cap = g_->limits().max_text_bytes;
  *room = f.count >= cap ? 0 : cap - f.count;
  *key = TextKey(f);
  return true;
}

void CallMatcher::StateKey(std::string* out) const {
  auto put = [out](auto v) { out->append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  put(calls_);
  put(text_);
  put(threads_);
  for (int t = 0; t < threads_; ++t) {
  const int top = tops_[static_cast<size_t>(t)];
  put(top);
  for (int i = 0; i <= top; ++i) {  // field by field: the struct's padding is not part of the state
    const Frame& f = Frames(t)[i];
    put(f.kind);
    put(f.phase);
    put(f.utf8_need);
    put(f.utf8_lo);
    put(f.utf8_hi);
    put(f.escape_seen);
    put(f.integer);
    put(f.node);
    put(f.lo);
    put(f.hi);
    put(f.depth);
    put(f.count);
    put(f.seen);
  }
  }
}

bool CallMatcher::SameThread(int a, int b) const {
  if (tops_[static_cast<size_t>(a)] != tops_[static_cast<size_t>(b)]) return false;
  const Frame* x = Frames(a);
  const Frame* y = Frames(b);
  for (int i = tops_[static_cast<size_t>(a)]; i >= 0; --i) {  // innermost first: where threads differ
    const Frame& f = x[i];
    const Frame& h = y[i];
    if (f.kind != h.kind || f.phase != h.phase || f.utf8_need != h.utf8_need || f.utf8_lo != h.utf8_lo || f.utf8_hi != h.utf8_hi ||
        f.escape_seen != h.escape_seen || f.integer != h.integer || f.node != h.node || f.lo != h.lo || f.hi != h.hi ||
        f.depth != h.depth || f.count != h.count || f.seen != h.seen)
      return false;
  }
  return true;
}

bool CallMatcher::LaterKeyOpen() const {
  for (int t = 1; t < threads_; ++t) {  // a union's branches: any of them
    CallMatcher one(g_);
    one.tops_[0] = tops_[static_cast<size_t>(t)];
    std::memcpy(static_cast<void*>(one.stack_.data()), Frames(t), static_cast<size_t>(tops_[static_cast<size_t>(t)] + 1) * sizeof(Frame));
    if (one.LaterKeyOpen()) return true;
  }
  for (int i = tops_[0]; i >= 0; --i) {
    const Frame& f = stack_[static_cast<size_t>(i)];
    if (f.kind == FrameKind::kFreeKey) return true;
    if (f.kind != FrameKind::kObject) continue;
    const CallGrammar::Node& node = g_->nodes()[static_cast<size_t>(f.node)];
    if (node.free_keys) return true;
    const size_t n = node.choices.size();
    const size_t after = f.seen == 0 ? 0 : static_cast<size_t>(64 - std::countl_zero(f.seen));  // past the last key
    return after < n;
  }
  return false;
}

bool CallMatcher::Done() const { return threads_ == 1 && tops_[0] == 0 && stack_[0].phase == kTopDone; }

bool CallMatcher::Feed(int symbol) {
  const int before = threads_;  // threads forked while feeding are fed at once, appended after these
  if (FeedThread(0, symbol) && threads_ == 1) return true;  // outside unions
  for (int t = 1; t < before; ++t) FeedThread(t, symbol);
  CompactThreads();
  return threads_ > 0;
}

bool CallMatcher::FeedThread(int t, int symbol) {
  cur_ = Frames(t);
  top_ = tops_[static_cast<size_t>(t)];
  bool ok = false;
  for (int guard = 0; guard < 2 * kMaxDepth + 4; ++guard) {
    Frame& f = cur_[top_];
    const Step step = FeedFrame(f, symbol);
    if (step == Step::kRefeed) continue;
    if (step == Step::kPopAndRefeed) {
      --top_;
      continue;
    }
    if (step == Step::kFork) {
      // This thread takes the first branch; each other branch is a copy of the thread, fed now.
      const CallGrammar::Node& n = g_->nodes()[static_cast<size_t>(f.node)];
      Frame* mine = cur_;
      const int my_top = top_;
      for (size_t b = 1; b < n.children.size(); ++b) {
        if (threads_ >= kMaxThreads) break;  // beyond the parser's bound: cannot happen
        const int nt = threads_++;
        Frame* dst = Frames(nt);
        const Frame branch = ValueFrame(n.children[b], true);
        std::memcpy(static_cast<void*>(dst), mine, static_cast<size_t>(my_top) * sizeof(Frame));
        std::memcpy(static_cast<void*>(dst + my_top), &branch, sizeof(Frame));
        tops_[static_cast<size_t>(nt)] = static_cast<int8_t>(my_top);
        FeedThread(nt, symbol);
      }
      cur_ = mine;
      top_ = my_top;
      cur_[top_] = ValueFrame(n.children[0], true);
      continue;
    }
    if (step == Step::kAcceptPop) --top_;
    ok = step != Step::kReject;
    break;
  }
  tops_[static_cast<size_t>(t)] = static_cast<int8_t>(ok ? top_ : -1);
  return ok;
}

void CallMatcher::CompactThreads() {
  int kept = 0;
  for (int t = 0; t < threads_; ++t) {
    if (tops_[static_cast<size_t>(t)] < 0) continue;
    bool duplicate = false;
    for (int k = 0; k < kept && !duplicate; ++k) duplicate = SameThread(k, t);
    if (duplicate) continue;
    if (kept != t) {
      tops_[static_cast<size_t>(kept)] = tops_[static_cast<size_t>(t)];
      std::memcpy(static_cast<void*>(Frames(kept)), Frames(t), static_cast<size_t>(tops_[static_cast<size_t>(t)] + 1) * sizeof(Frame));
    }
    ++kept;
  }
  threads_ = kept;
}

bool CallMatcher::FeedBytes(std::string_view bytes) {
  for (unsigned char c : bytes) {
    if (!Feed(c)) return false;
  }
  return true;
}

bool CallMatcher::Push(const Frame& f) {
  if (top_ + 1 >= kMaxDepth) return false;
  cur_[++top_] = f;
  return true;
}

bool CallMatcher::PushValue(int node) { return Push(ValueFrame(node, true)); }

CallMatcher::Frame CallMatcher::ValueFrame(int node, bool allow_null) const {
  const CallGrammar::Node& n = g_->nodes()[static_cast<size_t>(node)];
  Frame f;
  f.node = static_cast<int16_t>(node);
  if (n.nullable && allow_null) {
    f.kind = FrameKind::kNullable;
    return f;
  }
  switch (n.kind) {
    case CallGrammar::Kind::kString: f.kind = FrameKind::kString; break;
    case CallGrammar::Kind::kEnum: f.kind = FrameKind::kEnum; break;
    case CallGrammar::Kind::kInteger: f.kind = n.ranged ? FrameKind::kRangedNumber : FrameKind::kNumber; f.integer = true; break;
    case CallGrammar::Kind::kNumber: f.kind = n.ranged ? FrameKind::kRangedNumber : FrameKind::kNumber; break;
    case CallGrammar::Kind::kLiteral: f.kind = FrameKind::kLiteral; f.hi = static_cast<uint16_t>(n.choices.size()); break;
    case CallGrammar::Kind::kBoolean: f.kind = FrameKind::kBoolean; f.hi = 2; break;
    case CallGrammar::Kind::kArray: f.kind = FrameKind::kArray; break;
    case CallGrammar::Kind::kObject: f.kind = FrameKind::kObject; f.phase = kObjExpectOpen; break;
    case CallGrammar::Kind::kAny: f.kind = FrameKind::kAny; break;
    case CallGrammar::Kind::kUnion: f.kind = FrameKind::kUnion; break;
  }
  return f;
}

CallMatcher::Step CallMatcher::FeedNullable(Frame& f, int s) {
  // No value of any type but null starts with 'n' (strings open with <escape>, booleans with t/f).
  if (s == 'n') {
    f = ValueFrame(kNullNode, false);
  } else {
    f = ValueFrame(f.node, false);
  }
  return Step::kRefeed;
}

bool CallMatcher::NarrowChoice(const std::vector<std::string>& names, Frame& f, uint8_t b) {
  const size_t d = f.depth;
  size_t lo = f.lo, hi = f.hi;
  // Names sharing the matched prefix are contiguous in sorted order, and so are those whose next
  // byte is b among them.
  while (lo < hi && (names[lo].size() <= d || static_cast<uint8_t>(names[lo][d]) < b)) ++lo;
  size_t end = lo;
  while (end < hi && names[end].size() > d && static_cast<uint8_t>(names[end][d]) == b) ++end;
  if (lo == end) return false;
  f.lo = static_cast<uint16_t>(lo);
  f.hi = static_cast<uint16_t>(end);
  f.depth = static_cast<uint16_t>(d + 1);
  return true;
}

bool CallMatcher::FitsWholeCharacter(const Frame& f, int s, uint32_t cap) {
  // A lead byte needing k continuation bytes must fit them under the cap too; otherwise a capped
  // text could end in half a character, and then neither a byte nor the closing symbol is allowed.
  const uint32_t need = f.utf8_need > 0 ? 0 : s >= 0xF0 ? 3 : s >= 0xE0 ? 2 : s >= 0xC0 ? 1 : 0;
  return f.count + 1 + need <= cap;
}

bool CallMatcher::TextByte(Frame& f, uint8_t b) {
  if (f.utf8_need > 0) {
    if (b < f.utf8_lo || b > f.utf8_hi) return false;
    --f.utf8_need;
    f.utf8_lo = 0x80;
    f.utf8_hi = 0xBF;
  } else if (b == 0) {
    return false;
  } else if (b >= 0x80) {
    if (b >= 0xC2 && b <= 0xDF) {
      f.utf8_need = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
      f.utf8_need = 2;
      if (b == 0xE0) f.utf8_lo = 0xA0;  // no overlong forms
      if (b == 0xED) f.utf8_hi = 0x9F;  // no surrogates
    } else if (b >= 0xF0 && b <= 0xF4) {
      f.utf8_need = 3;
      if (b == 0xF0) f.utf8_lo = 0x90;
      if (b == 0xF4) f.utf8_hi = 0x8F;
    } else {
      return false;
    }
  }
  // "<escape>" spelled with ordinary tokens would read as the control token when parsed back.
  if (b == static_cast<uint8_t>(kEscapeText[f.escape_seen])) {
    if (++f.escape_seen == kEscapeText.size()) return false;
  } else {
    f.escape_seen = b == '<' ? 1 : 0;
  }
  return true;
}

CallMatcher::Step CallMatcher::FeedFrame(Frame& f, int s) {
  switch (f.kind) {
    case FrameKind::kTop: return FeedTop(f, s);
    case FrameKind::kObject: return FeedObject(f, s);
    case FrameKind::kString: return FeedString(f, s);
    case FrameKind::kEnum: return FeedEnum(f, s);
    case FrameKind::kNumber: return FeedNumber(f, s);
    case FrameKind::kBoolean: return FeedBoolean(f, s);
    case FrameKind::kArray: return FeedArray(f, s);
    case FrameKind::kAny: return FeedAny(f, s);
    case FrameKind::kFreeKey: return FeedFreeKey(f, s);
    case FrameKind::kRangedNumber: return FeedRangedNumber(f, s);
    case FrameKind::kLiteral: return FeedLiteral(f, s);
    case FrameKind::kNullable: return FeedNullable(f, s);
    case FrameKind::kUnion: return Step::kFork;
  }
  return Step::kReject;
}

CallMatcher::Step CallMatcher::FeedTop(Frame& f, int s) {
  const ToolChoiceMode mode = g_->choice().mode;
  const GrammarLimits& lim = g_->limits();
  switch (f.phase) {
    case kTopStart:
      if (s == kSymStartCall && mode != ToolChoiceMode::kNone) {
        f.phase = kTopCallLiteral;
        f.depth = 0;
        return Step::kAccept;
      }
      if (s < 256 && (mode == ToolChoiceMode::kAuto || mode == ToolChoiceMode::kNone)) {
        f.phase = kTopText;
        text_ = true;
        return Step::kRefeed;
      }
      return Step::kReject;
    case kTopText:
      if (s == kSymEndOfTurn || s == kSymEos) {
        if (f.count == 0 || f.utf8_need != 0) return Step::kReject;
        f.phase = kTopDone;
        return Step::kAccept;
      }
      if (s >= 256 || !FitsWholeCharacter(f, s, lim.max_text_bytes) || !TextByte(f, static_cast<uint8_t>(s))) {
        return Step::kReject;
      }
      ++f.count;
      return Step::kAccept;
    case kTopCallLiteral:
      if (s != static_cast<uint8_t>(kCallLiteral[f.depth])) return Step::kReject;
      if (++f.depth == kCallLiteral.size()) {
        f.phase = kTopName;
        f.depth = 0;
        const int forced = g_->forced_function();
        f.lo = static_cast<uint16_t>(forced >= 0 ? forced : 0);
        f.hi = static_cast<uint16_t>(forced >= 0 ? forced + 1 : static_cast<int>(g_->function_names().size()));
      }
      return Step::kAccept;
    case kTopName: {
      const auto& names = g_->function_names();
      if (s == '{') {
        if (f.lo >= f.hi || names[f.lo].size() != f.depth) return Step::kReject;
        f.phase = kTopAfterArgs;
        Frame obj;
        obj.kind = FrameKind::kObject;
        obj.node = static_cast<int16_t>(g_->function_params(f.lo));
        obj.phase = kObjKeyOrClose;  // '{' already consumed here
        return Push(obj) ? Step::kAccept : Step::kReject;
      }
      if (s >= 256 || !NarrowChoice(names, f, static_cast<uint8_t>(s))) return Step::kReject;
      return Step::kAccept;
    }
    case kTopAfterArgs:
      if (s != kSymEndCall) return Step::kReject;
      ++calls_;
      f.phase = kTopAfterCall;
      return Step::kAccept;
    case kTopAfterCall:
      if (s == kSymStartCall && calls_ < lim.max_calls && mode != ToolChoiceMode::kFunction) {
        f.phase = kTopCallLiteral;
        f.depth = 0;
        return Step::kAccept;
      }
      if (s == kSymStartResponse || s == kSymEndOfTurn || s == kSymEos) {
        f.phase = kTopDone;
        return Step::kAccept;
      }
      return Step::kReject;
    default:
      return Step::kReject;
  }
}

CallMatcher::Step CallMatcher::FeedObject(Frame& f, int s) {
  const CallGrammar::Node& n = g_->nodes()[static_cast<size_t>(f.node)];
  const GrammarLimits& lim = g_->limits();
  const uint64_t all = n.choices.size() >= 64 ? ~0ull : (1ull << n.choices.size()) - 1;
  const bool required_done = (n.required_mask & ~f.seen) == 0;
  const bool more_keys = n.free_keys ? f.count < lim.max_free_keys : (all & ~f.seen) != 0;
  auto start_key = [&]() -> Step {
    if (s >= 256 || !more_keys) return Step::kReject;
    if (n.free_keys) {
      Frame key;
      key.kind = FrameKind::kFreeKey;
      if (!IsKeyByte(s) || !Push(key)) return Step::kReject;
      f.phase = kObjAfterValue;
      ++f.count;
      return Step::kRefeed;
    }
    f.lo = 0;
    f.hi = static_cast<uint16_t>(n.choices.size());
    f.depth = 0;
    f.phase = kObjKey;
    return Step::kRefeed;
  };
  switch (f.phase) {
    case kObjExpectOpen:
      if (s != '{') return Step::kReject;
      f.phase = kObjKeyOrClose;
      return Step::kAccept;
    case kObjKeyOrClose:
      if (s == '}') return required_done ? Step::kAcceptPop : Step::kReject;
      return start_key();
    case kObjKeyStart:
      return start_key();
    case kObjKey: {
      if (s == ':') {
        if (f.lo >= f.hi || n.choices[f.lo].size() != f.depth || (f.seen >> f.lo & 1)) return Step::kReject;
        f.seen |= 1ull << f.lo;
        f.phase = kObjAfterValue;
        return PushValue(n.children[f.lo]) ? Step::kAccept : Step::kReject;
      }
      if (s >= 256 || !NarrowChoice(n.choices, f, static_cast<uint8_t>(s))) return Step::kReject;
      for (size_t i = f.lo; i < f.hi; ++i) {
        if (!(f.seen >> i & 1)) return Step::kAccept;  // some unused key still fits the prefix
      }
      return Step::kReject;
    }
    case kObjAfterValue:
      if (s == ',') {
        if (!more_keys) return Step::kReject;
        f.phase = kObjKeyStart;
        return Step::kAccept;
      }
      if (s == '}') return required_done ? Step::kAcceptPop : Step::kReject;
      return Step::kReject;
    default:
      return Step::kReject;
  }
}

CallMatcher::Step CallMatcher::FeedFreeKey(Frame& f, int s) {
  if (s == ':') {
    if (f.count == 0) return Step::kReject;
    // Replace the key frame by the value it introduces.
    --top_;
    return PushValue(kAnyNode) ? Step::kAccept : Step::kReject;
  }
  if (s >= 256 || !IsKeyByte(s) || f.count >= g_->limits().max_free_key_bytes) return Step::kReject;
  ++f.count;
  return Step::kAccept;
}

// A pattern with length bounds: after this byte (automaton state `next`, `chars` characters, the
// frame's UTF-8 progress updated), some completion matches with a length in bounds, in the bytes left.
bool CallMatcher::LengthsReachable(const CallGrammar::Node& n, const Frame& f, uint16_t next, uint64_t chars, uint32_t cap) {
  const uint32_t width = n.length_width;
  const uint32_t bytes_left = cap - f.count - 1 - f.utf8_need;  // after this byte and the character's rest
  const uint32_t from = n.min_chars > chars ? static_cast<uint32_t>(n.min_chars - chars) : 0;
  const uint32_t to = n.max_chars == UINT32_MAX ? width - 1 : std::min<uint64_t>(width - 1, n.max_chars - chars);
  auto reachable = [&](uint16_t q) {
    const uint16_t* row = n.pattern_lengths->data() + static_cast<size_t>(q) * width;
    for (uint32_t k = from; k <= to; ++k) {
      if (row[k] <= bytes_left) return true;
    }
    return false;
  };
  if (f.utf8_need == 0) return reachable(next);
  std::array<uint16_t, kMaxPatternStates> ends;
  const size_t count = FinishCharacter(*n.pattern, next, f.utf8_need, f.utf8_lo, f.utf8_hi, ends.data());
  for (size_t i = 0; i < count; ++i) {
    if (reachable(ends[i])) return true;
  }
  return false;
}

CallMatcher::Step CallMatcher::FeedString(Frame& f, int s) {
  const CallGrammar::Node& n = g_->nodes()[static_cast<size_t>(f.node)];
  const PatternDfa* dfa = n.pattern.get();
  if (f.phase == 0) {
    if (s != kSymEscape) return Step::kReject;
    f.phase = 1;
    if (dfa != nullptr) f.lo = dfa->start;
    return Step::kAccept;
  }
  if (s == kSymEscape) {
    const bool complete = f.utf8_need == 0 && f.seen >= n.min_chars && (dfa == nullptr || dfa->accepting[f.lo]);
    return complete ? Step::kAcceptPop : Step::kReject;
  }
  if (s >= 256) return Step::kReject;
  const uint32_t cap = g_->limits().max_string_bytes;
  const bool new_char = f.utf8_need == 0;
  const uint64_t chars = f.seen + (new_char ? 1 : 0);
  if (chars > n.max_chars) return Step::kReject;
  // Room is kept for the characters minLength still needs, one byte each at least.
  const uint32_t reserve = n.min_chars > chars ? static_cast<uint32_t>(n.min_chars - chars) : 0;
  if (reserve > cap || !FitsWholeCharacter(f, s, cap - reserve)) return Step::kReject;
  uint16_t next = 0;
  if (dfa != nullptr) {
    next = dfa->next[f.lo][static_cast<size_t>(s)];
    if (next == PatternDfa::kDead || f.count + 1 + dfa->to_accept[next] > cap) return Step::kReject;
  }
  if (!TextByte(f, static_cast<uint8_t>(s))) return Step::kReject;
  if (n.pattern_lengths != nullptr && !LengthsReachable(n, f, next, chars, cap)) return Step::kReject;
  ++f.count;
  f.seen = chars;
  if (dfa != nullptr) f.lo = next;
  return Step::kAccept;
}

CallMatcher::Step CallMatcher::FeedLiteral(Frame& f, int s) {
  const auto& values = g_->nodes()[static_cast<size_t>(f.node)].choices;
  // No literal character (digits, '.', '-', '+', letters) can follow a value in its parent.
  if (s < 256 && NarrowChoice(values, f, static_cast<uint8_t>(s))) return Step::kAccept;
  if (f.lo < f.hi && values[f.lo].size() == f.depth) return Step::kPopAndRefeed;
  return Step::kReject;
}

CallMatcher::Step CallMatcher::FeedRangedNumber(Frame& f, int s) {
  // f.lo: negative; f.seen: the digits as an integer; f.hi: digits; f.depth: digits after the point.
  const CallGrammar::Node& n = g_->nodes()[static_cast<size_t>(f.node)];
  const int total = f.integer ? kRangedIntegerDigits : kRangedNumberDigits;
  const bool neg = f.lo != 0;
  const bool digit = IsDigit(s);
  const uint64_t d = digit ? static_cast<uint64_t>(s - '0') : 0;
  switch (f.phase) {
    case kNumStart:
      if (s == '-') {
        if (n.lo >= 0) return Step::kReject;  // "-0" only where negatives are allowed anyway
        for (uint64_t first = 0; first < 10; ++first) {
          if (RangeReachable(n, true, first, 1, 0, false)) {
            f.lo = 1;
            f.phase = kNumSign;
            return Step::kAccept;
          }
        }
        return Step::kReject;
      }
      [[fallthrough]];
    case kNumSign:
      if (!digit || !RangeReachable(n, neg, d, 1, 0, false)) return Step::kReject;
      f.seen = d;
      f.hi = 1;
      f.phase = d == 0 ? kNumZero : kNumInt;
      return Step::kAccept;
    case kNumZero:
    case kNumInt:
      if (digit) {
        if (f.phase == kNumZero || f.hi >= total || !RangeReachable(n, neg, f.seen * 10 + d, f.hi + 1, 0, false)) return Step::kReject;
        f.seen = f.seen * 10 + d;
        ++f.hi;
        return Step::kAccept;
      }
      if (s == '.' && !f.integer) {
        if (!RangeReachable(n, neg, f.seen, f.hi, 0, true)) return Step::kReject;
        f.phase = kNumFrac0;
        return Step::kAccept;
      }
      return RangedValueOk(n, neg, f.seen, 0) ? Step::kPopAndRefeed : Step::kReject;
    case kNumFrac0:
    case kNumFrac:
      if (digit) {
        if (f.depth >= kFracDigits || f.hi >= total || !RangeReachable(n, neg, f.seen * 10 + d, f.hi + 1, f.depth + 1, true))
          return Step::kReject;
        f.seen = f.seen * 10 + d;
        ++f.hi;
        ++f.depth;
        f.phase = kNumFrac;
        return Step::kAccept;
      }
      if (f.phase == kNumFrac0) return Step::kReject;
      return RangedValueOk(n, neg, f.seen, f.depth) ? Step::kPopAndRefeed : Step::kReject;
    default:
      return Step::kReject;
  }
}

CallMatcher::Step CallMatcher::FeedEnum(Frame& f, int s) {
  const auto& values = g_->nodes()[static_cast<size_t>(f.node)].choices;
  if (f.phase == 0) {
    if (s != kSymEscape) return Step::kReject;
    f.phase = 1;
    f.lo = 0;
    f.hi = static_cast<uint16_t>(values.size());
    f.depth = 0;
    return Step::kAccept;
  }
  if (s == kSymEscape) return f.lo < f.hi && values[f.lo].size() == f.depth ? Step::kAcceptPop : Step::kReject;
  if (s >= 256 || !NarrowChoice(values, f, static_cast<uint8_t>(s))) return Step::kReject;
  return Step::kAccept;
}

CallMatcher::Step CallMatcher::FeedNumber(Frame& f, int s) {
  // f.count counts the digits of the current part. Caps keep every value finite and exact enough
  // for its JSON type: integers fit int64 (18 digits), floats have at most 15 + 15 digits and a
  // two-digit exponent.
  const uint32_t int_cap = f.integer ? 18 : 15, frac_cap = 15, exp_cap = 2;
  auto next = [&](uint8_t phase, bool new_part) {
    f.count = new_part ? 0 : f.count + 1;
    f.phase = phase;
    return Step::kAccept;
  };
  switch (f.phase) {
    case kNumStart:
      if (s == '-') return next(kNumSign, true);
      [[fallthrough]];
    case kNumSign:
      if (s == '0') return next(kNumZero, false);
      if (s >= '1' && s <= '9') return next(kNumInt, false);
      return Step::kReject;
    case kNumZero:
    case kNumInt:
      if (f.phase == kNumInt && IsDigit(s) && f.count < int_cap) return next(kNumInt, false);
      if (!f.integer && s == '.') return next(kNumFrac0, true);
      if (!f.integer && (s == 'e' || s == 'E')) return next(kNumExp0, true);
      return Step::kPopAndRefeed;
    case kNumFrac0:
      return IsDigit(s) ? next(kNumFrac, false) : Step::kReject;
    case kNumFrac:
      if (IsDigit(s) && f.count < frac_cap) return next(kNumFrac, false);
      if (s == 'e' || s == 'E') return next(kNumExp0, true);
      return Step::kPopAndRefeed;
    case kNumExp0:
      if (s == '+' || s == '-') return next(kNumExpSign, true);
      [[fallthrough]];
    case kNumExpSign:
      return IsDigit(s) ? next(kNumExp, false) : Step::kReject;
    case kNumExp:
      if (IsDigit(s) && f.count < exp_cap) return next(kNumExp, false);
      return Step::kPopAndRefeed;
    default:
      return Step::kReject;
  }
}

CallMatcher::Step CallMatcher::FeedBoolean(Frame& f, int s) {
  if (f.lo < f.hi && kBooleans[f.lo].size() == f.depth) return Step::kPopAndRefeed;
  if (s >= 256 || !NarrowChoice(kBooleans, f, static_cast<uint8_t>(s))) return Step::kReject;
  return Step::kAccept;
}

CallMatcher::Step CallMatcher::FeedArray(Frame& f, int s) {
  const CallGrammar::Node& n = g_->nodes()[static_cast<size_t>(f.node)];
  const int item = n.children[0];
  // The grammar's cap, raised to minItems, lowered to maxItems.
  const uint32_t most = std::min(n.max_items, std::max(g_->limits().max_array_items, n.min_items));
  switch (f.phase) {
    case 0:
      if (s != '[') return Step::kReject;
      f.phase = 1;
      return Step::kAccept;
    case 1:
      if (s == ']') return n.min_items == 0 ? Step::kAcceptPop : Step::kReject;
      if (most == 0) return Step::kReject;
      f.phase = 2;
      f.count = 1;
      return PushValue(item) ? Step::kRefeed : Step::kReject;
    case 2:
      if (s == ']') return f.count >= n.min_items ? Step::kAcceptPop : Step::kReject;
      if (s == ',' && f.count < most) {
        ++f.count;
        return PushValue(item) ? Step::kAccept : Step::kReject;
      }
      return Step::kReject;
    default:
      return Step::kReject;
  }
}

CallMatcher::Step CallMatcher::FeedAny(Frame& f, int s) {
  // The first symbol decides the value's type; the frame becomes that type and sees it again.
  Frame v;
  if (s == kSymEscape) {
    v.kind = FrameKind::kString;
  } else if (s == '-' || IsDigit(s)) {
    v.kind = FrameKind::kNumber;
  } else if (s == 't' || s == 'f') {
    v.kind = FrameKind::kBoolean;
    v.hi = 2;
  } else if (s == '[') {
    v.kind = FrameKind::kArray;
    v.node = kAnyArrayNode;
  } else if (s == '{') {
    v.kind = FrameKind::kObject;
    v.node = kFreeObjectNode;
    v.phase = kObjExpectOpen;
  } else {
    return Step::kReject;
  }
  // Nested "any" values would otherwise nest without bound; the depth cap in Push ends them.
  f = v;
  return Step::kRefeed;
}

}  // namespace fgemma
