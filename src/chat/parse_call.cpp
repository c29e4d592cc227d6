#include "chat/parse_call.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

#include "chat/call_format.h"

namespace fgemma {
namespace {

constexpr int kMaxDepth = 64;
constexpr std::string_view kEos = "<eos>";

// The syntax tree of one value before typing: which form the model used decides, together with the
// schema, what JSON it becomes.
// (Members are a named struct, not std::pair: a pair of an incomplete Node is ill-formed, and
// clang's libstdc++ checks reject it.)
struct NodeMember;
struct Node {
  enum class Kind { kEscaped, kBare, kArray, kObject } kind = Kind::kBare;
  std::string text;                 // kEscaped, kBare
  std::vector<Node> elements;       // kArray
  std::vector<NodeMember> members;  // kObject
};
struct NodeMember {
  std::string key;
  Node value;
};

class CallSyntax {
 public:
  CallSyntax(std::string_view s, size_t pos) : s_(s), pos_(pos) {}
  size_t pos() const { return pos_; }

  // `{key:value,...}` starting at '{'.
  Result<Node> Object(int depth) {
    if (depth > kMaxDepth) return Error("values nested deeper than " + std::to_string(kMaxDepth) + " levels");
    Node node;
    node.kind = Node::Kind::kObject;
    ++pos_;  // '{'
    SkipSpace();
    if (Peek('}')) {
      ++pos_;
      return node;
    }
    while (true) {
      SkipSpace();
      FGEMMA_TRY(std::string key, Key());
      SkipSpace();
      if (AtEnd()) return Error("output ends after key '" + key + "' (expected ':')");
      if (!Peek(':')) return Error("expected ':' after key '" + key + "'");
      ++pos_;
      FGEMMA_TRY(Node value, Value(depth + 1));
      node.members.push_back(NodeMember{std::move(key), std::move(value)});
      FGEMMA_TRY(bool more, Separator('}'));
      if (!more) return node;
    }
  }

  Status Error(const std::string& what) const { return InvalidArgument("byte " + std::to_string(pos_) + ": " + what); }
  bool AtEnd() const { return pos_ >= s_.size(); }
  bool StartsWith(std::string_view token) const { return s_.substr(pos_, token.size()) == token; }

 private:
  bool Peek(char c) const { return pos_ < s_.size() && s_[pos_] == c; }
  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }

  // After a member or element: ',' (true: another follows) or the closing bracket (false).
  Result<bool> Separator(char close) {
    SkipSpace();
    if (AtEnd()) return Error(std::string("output ends before '") + close + "'");
    if (Peek(',')) {
      ++pos_;
      return true;
    }
    if (Peek(close)) {
      ++pos_;
      return false;
    }
    return Error(std::string("expected ',' or '") + close + "', found '" + s_[pos_] + "'");
  }

  // Text between <escape> markers; pos_ is at the opening marker.
  Result<std::string> Escaped() {
    const size_t start = pos_;
    pos_ += kEscape.size();
    const size_t end = s_.find(kEscape, pos_);
    if (end == std::string_view::npos) {
      pos_ = start;
      return Error("output ends inside a string value (no closing <escape>)");
    }
    std::string text(s_.substr(pos_, end - pos_));
    pos_ = end + kEscape.size();
    return text;
  }

  // A key: bare (up to ':') or escaped (nested keys in escape_keys form).
  Result<std::string> Key() {
    if (StartsWith(kEscape)) return Escaped();
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != ':' && s_[pos_] != ',' && s_[pos_] != '{' && s_[pos_] != '}' &&
           s_[pos_] != '[' && s_[pos_] != ']' && s_[pos_] != '<')
      ++pos_;
    std::string key(s_.substr(start, pos_ - start));
    while (!key.empty() && (key.back() == ' ' || key.back() == '\n' || key.back() == '\t')) key.pop_back();
    if (key.empty()) {
      pos_ = start;
      return AtEnd() ? Error("output ends where a key was expected") : Error("expected a key");
    }
    return key;
  }

  Result<Node> Value(int depth) {
    if (depth > kMaxDepth) return Error("values nested deeper than " + std::to_string(kMaxDepth) + " levels");
    SkipSpace();
    if (AtEnd()) return Error("output ends where a value was expected");
    if (StartsWith(kEscape)) {
      Node node;
      node.kind = Node::Kind::kEscaped;
      FGEMMA_TRY(node.text, Escaped());
      return node;
    }
    if (Peek('{')) return Object(depth);
    if (Peek('[')) {
      Node node;
      node.kind = Node::Kind::kArray;
      ++pos_;
      SkipSpace();
      if (Peek(']')) {
        ++pos_;
        return node;
      }
      while (true) {
        FGEMMA_TRY(Node element, Value(depth + 1));
        node.elements.push_back(std::move(element));
        FGEMMA_TRY(bool more, Separator(']'));
        if (!more) return node;
      }
    }
    // A bare token: a number, true/false, None, or unquoted text; it ends at , } ] or a '<' marker.
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != ',' && s_[pos_] != '}' && s_[pos_] != ']' && s_[pos_] != '<') ++pos_;
    Node node;
    node.text = std::string(s_.substr(start, pos_ - start));
    while (!node.text.empty() && (node.text.back() == ' ' || node.text.back() == '\n' || node.text.back() == '\t'))
      node.text.pop_back();
    if (node.text.empty()) {
      pos_ = start;
      return Error("expected a value");
    }
    if (AtEnd()) return Error("output ends inside the value '" + node.text + "'");
    return node;
  }

  std::string_view s_;
  size_t pos_;
};

// A JSON number if `text` is one (as Python or JSON print numbers); integers stay integers.
std::optional<Json> ParseNumber(std::string_view text) {
  size_t i = 0;
  if (i < text.size() && text[i] == '-') ++i;
  const size_t int_start = i;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  if (i == int_start) return std::nullopt;
  bool is_float = false;
  if (i < text.size() && text[i] == '.') {
    is_float = true;
    const size_t frac = ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    if (i == frac) return std::nullopt;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    is_float = true;
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    const size_t exp = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    if (i == exp) return std::nullopt;
  }
  if (i != text.size()) return std::nullopt;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (!is_float) {
    int64_t v = 0;
    if (std::from_chars(first, last, v).ec == std::errc()) return Json(v);
    uint64_t u = 0;
    if (text[0] != '-' && std::from_chars(first, last, u).ec == std::errc()) return Json(u);
  }
  double d = 0;
  const auto res = std::from_chars(first, last, d);
  if (res.ec != std::errc() || !std::isfinite(d)) return std::nullopt;
  return Json(d);
}

// Strict UTF-8 (no overlong forms, surrogates or code points past U+10FFFF). Model output is bytes
// from the detokenizer; a string that is not UTF-8 could not be serialized as JSON later.
bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    uint32_t cp = len == 1 ? b : len == 2 ? (b & 0x1f) : len == 3 ? (b & 0x0f) : (b & 0x07);
    for (size_t k = 1; k < len; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += len;
  }
  return true;
}

// An integral float becomes an integer where the schema asks for one (5.0 -> 5).
Json NarrowForSchema(Json number, const Schema* schema) {
  if (schema != nullptr && schema->Admits(SchemaType::kInteger) && !schema->Admits(SchemaType::kNumber) && number.is_number_float()) {
    const double d = number.get<double>();
    if (std::floor(d) == d && std::fabs(d) < 9.0e15) return Json(static_cast<int64_t>(d));
  }
  return number;
}

Json Typed(const Node& node, const Schema* schema, const std::string& path, std::vector<std::string>* errors) {
  if (!IsValidUtf8(node.text)) errors->push_back(path + ": text is not valid UTF-8");
  // Under a union (anyOf, a type list) the types its branches admit; a string is read as the
  // other scalar types only where no branch takes a string.
  const bool wants_string = schema != nullptr && schema->Admits(SchemaType::kString);
  const bool wants_number = schema != nullptr && (schema->Admits(SchemaType::kInteger) || schema->Admits(SchemaType::kNumber));
  const bool wants_bool = schema != nullptr && schema->Admits(SchemaType::kBoolean);
  switch (node.kind) {
    case Node::Kind::kEscaped:
      // The template always escapes strings; a model may still quote a number or boolean.
      if (wants_number && !wants_string) {
        if (auto n = ParseNumber(node.text)) return NarrowForSchema(*n, schema);
      }
      if (wants_bool && !wants_string && (node.text == "true" || node.text == "false")) return node.text == "true";
      return node.text;
    case Node::Kind::kBare:
      if (node.text == "None" || node.text == "null") return nullptr;
      if (wants_string && !wants_number && !wants_bool) return node.text;
      if (node.text == "true" || node.text == "True") return true;
      if (node.text == "false" || node.text == "False") return false;
      if (auto n = ParseNumber(node.text)) return NarrowForSchema(*n, schema);
      return node.text;
    case Node::Kind::kArray: {
      const Schema* array = schema != nullptr ? schema->BranchOf(SchemaType::kArray) : nullptr;
      const Schema* items = array != nullptr ? array->items.get() : nullptr;
      Json out = Json::array();
      for (size_t i = 0; i < node.elements.size(); ++i)
        out.push_back(Typed(node.elements[i], items, FieldPath(path, i), errors));
      return out;
    }
    case Node::Kind::kObject: {
      const Schema* object = schema != nullptr ? schema->BranchOf(SchemaType::kObject) : nullptr;
      Json out = Json::object();
      for (const auto& [key, value] : node.members) {  // NodeMember{key, value}
        const std::string sub = FieldPath(path, key);
        if (!IsValidUtf8(key)) errors->push_back(sub + ": key is not valid UTF-8");
        if (out.contains(key)) errors->push_back(sub + ": given more than once (the last value is kept)");
        out[key] = Typed(value, object != nullptr ? object->FindProperty(key) : nullptr, sub, errors);
      }
      return out;
    }
  }
  return nullptr;
}

// Parses one call whose <start_function_call> ends at `pos`; on success `*end` is past
// <end_function_call>.
Result<ParsedCall> ParseCall(std::string_view s, size_t start, size_t pos, const std::vector<Tool>* tools, size_t* end) {
  CallSyntax syntax(s, pos);
  if (s.substr(pos, 5) != "call:") {
    return s.size() - pos < 5 && std::string_view("call:").substr(0, s.size() - pos) == s.substr(pos)
               ? syntax.Error("output ends inside 'call:'")
               : syntax.Error("expected 'call:' after <start_function_call>");
  }
  const size_t name_start = pos + 5;
  const size_t brace = s.find('{', name_start);
  if (brace == std::string_view::npos) {
    // A name without its '{' yet: truncated if nothing else is there, malformed otherwise.
    const std::string_view rest = s.substr(name_start);
    return IsPlainName(rest) || rest.empty() ? CallSyntax(s, s.size()).Error("output ends inside the function name")
                                             : CallSyntax(s, name_start).Error("expected '{' after the function name");
  }
  ParsedCall call;
  call.name = std::string(s.substr(name_start, brace - name_start));
  if (!IsPlainName(call.name)) return CallSyntax(s, name_start).Error("malformed function name '" + call.name + "'");
  CallSyntax args(s, brace);
  FGEMMA_TRY(Node node, args.Object(0));
  if (!args.StartsWith(kEndFunctionCall)) {
    if (args.AtEnd()) return args.Error("output ends after the arguments of '" + call.name + "' (no <end_function_call>)");
    const std::string_view rest = s.substr(args.pos());
    if (kEndFunctionCall.substr(0, rest.size()) == rest) return args.Error("output ends inside <end_function_call>");
    return args.Error("expected <end_function_call> after the arguments of '" + call.name + "'");
  }
  *end = args.pos() + kEndFunctionCall.size();
  call.offset = start;
  call.raw = std::string(s.substr(start, *end - start));
  const Tool* tool = nullptr;
  if (tools != nullptr) {
    for (const auto& t : *tools) {
      if (t.name == call.name) {
        tool = &t;  // the first declaration of a repeated name, as ChatRequest::FindTool
        break;
      }
    }
    if (tool == nullptr) call.errors.push_back("unknown function '" + call.name + "'");
  }
  call.arguments = Typed(node, tool ? &tool->parameters : nullptr, "arguments", &call.errors);
  if (tool != nullptr) {
    for (auto& e : ValidateArguments(tool->parameters, call.arguments, "arguments")) call.errors.push_back(std::move(e));
  }
  return call;
}

ParsedOutput Parse(std::string_view s, const std::vector<Tool>* tools) {
  ParsedOutput out;
  out.raw = std::string(s);
  size_t pos = 0;
  while (pos < s.size()) {
    // The next call or end-of-turn marker, whichever comes first.
    size_t next = s.size();
    std::string_view marker;
    for (std::string_view m : {kStartFunctionCall, kEndOfTurn, kStartFunctionResponse, kEos}) {
      const size_t at = s.find(m, pos);
      if (at < next) {
        next = at;
        marker = m;
      }
    }
    out.text.append(s.substr(pos, next - pos));
    if (next == s.size()) break;
    if (marker != kStartFunctionCall) {
      out.ended_turn = true;
      break;
    }
    size_t end = 0;
    auto call = ParseCall(s, next, next + kStartFunctionCall.size(), tools, &end);
    if (!call.ok()) {
      out.status = call.status();
      break;
    }
    out.calls.push_back(std::move(call).value());
    pos = end;
  }
  return out;
}

}  // namespace

bool ParsedOutput::ok() const {
  if (!status.ok()) return false;
  for (const auto& c : calls) {
    if (!c.ok()) return false;
  }
  return true;
}

std::string ParsedOutput::ErrorSummary() const {
  std::string out;
  if (!status.ok()) out += status.message() + "\n";
  for (size_t i = 0; i < calls.size(); ++i) {
    for (const auto& e : calls[i].errors) out += "call " + std::to_string(i) + " (" + calls[i].name + "): " + e + "\n";
  }
  return out;
}

ParsedOutput ParseModelOutput(std::string_view output, const std::vector<Tool>& tools) { return Parse(output, &tools); }
ParsedOutput ParseModelOutput(std::string_view output) { return Parse(output, nullptr); }

}  // namespace fgemma
