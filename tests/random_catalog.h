// Random tool catalogs, arguments and utterances for constrained-decoding tests.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "chat/chat_json.h"
#include "util/json.h"

namespace fgemma::test {

class CatalogGenerator {
 public:
  // `keywords`: schemas also draw every keyword the grammar enforces (numeric enums and ranges,
  // steps, string lengths, patterns and formats (also beside lengths), item counts, const, nullable,
  // anyOf, type lists); off, the sequence of catalogs is the one the older tests were written against.
  explicit CatalogGenerator(uint32_t seed, bool keywords = false) : rng_(seed), keywords_(keywords) {}

  std::string Identifier(size_t min_len = 2) {
    static const char* kWords[] = {"get", "set", "light", "room", "temp", "mode", "level", "play", "song", "alarm",
                                   "time", "door", "lock", "color", "fan", "speed", "scene", "timer", "volume", "city"};
    std::string s = kWords[Pick(20)];
    const size_t parts = 1 + Pick(2);
    for (size_t i = 0; i < parts || s.size() < min_len; ++i) s += std::string("_") + kWords[Pick(20)];
    return s;
  }

  OrderedJson Schema(int depth) {
    const size_t kind = Pick(depth > 1 ? 5 : 7);
    OrderedJson s;
    s["description"] = "a " + Identifier() + " value";
    if (keywords_ && Pick(3) != 0) {
      AddKeywords(kind, &s, depth);
      return s;
    }
    switch (kind) {
      case 0: s["type"] = "string"; break;
      case 1: {
        s["type"] = "string";
        OrderedJson e = OrderedJson::array();
        const size_t n = 2 + Pick(3);
        for (size_t i = 0; i < n; ++i) e.push_back(Identifier() + std::to_string(i));
        s["enum"] = e;
        break;
      }
      case 2: s["type"] = "integer"; break;
      case 3: s["type"] = "number"; break;
      case 4: s["type"] = "boolean"; break;
      case 5: s["type"] = "array"; s["items"] = Schema(depth + 1); break;
      default: s = Object(depth + 1); break;
    }
    return s;
  }

  OrderedJson Object(int depth) {
    OrderedJson s;
    s["type"] = "object";
    s["properties"] = OrderedJson::object();
    OrderedJson req = OrderedJson::array();
    const size_t n = Pick(4) + (depth == 0 ? 0 : 1);
    for (size_t i = 0; i < n; ++i) {
      const std::string name = Identifier() + std::to_string(i);
      s["properties"][name] = Schema(depth);
      if (Pick(2) == 0) req.push_back(name);
    }
    s["required"] = req;
    return s;
  }

  // {"type":"function","function":{name, description, parameters}} x n
  OrderedJson Tools(size_t n) {
    OrderedJson tools = OrderedJson::array();
    for (size_t i = 0; i < n; ++i) {
      OrderedJson f;
      f["name"] = Identifier() + "_" + std::to_string(i);
      f["description"] = "Does " + Identifier() + " things.";
      f["parameters"] = Object(0);
      tools.push_back({{"type", "function"}, {"function", f}});
    }
    return tools;
  }

  std::string Utterance() {
    static const char* kWords[] = {"please", "turn", "on", "the", "kitchen", "lights", "set", "temperature", "to",
                                   "21", "degrees", "play", "jazz", "in", "living", "room", "lock", "front", "door", "now"};
    std::string s;
    const size_t n = 3 + Pick(10);
    for (size_t i = 0; i < n; ++i) s += (i ? " " : "") + std::string(kWords[Pick(20)]);
    return s;
  }

  size_t Pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

 private:
  int64_t Int(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  // A bound: small, negative, large, or fractional.
  OrderedJson Bound(bool integer) {
    switch (Pick(4)) {
      case 0: return Int(-20, 20);
      case 1: return Int(-5000000000, -1000);
      case 2: return Int(1000, 900000000000);
      default: return integer ? OrderedJson(Int(-100, 100)) : OrderedJson(static_cast<double>(Int(-4000, 4000)) / 16.0);
    }
  }

  void NumberKeywords(bool integer, OrderedJson* s) {
    (*s)["type"] = integer ? "integer" : "number";
    if (Pick(4) == 0) {
      OrderedJson e = OrderedJson::array();
      for (size_t i = 0, n = 1 + Pick(4); i < n; ++i)
        e.push_back(integer ? OrderedJson(Int(-300, 300)) : OrderedJson(static_cast<double>(Int(-300, 300)) / 8.0));
      (*s)["enum"] = e;
      return;
    }
    OrderedJson lo = Bound(integer), hi = Bound(integer);
    if (lo.get<double>() > hi.get<double>()) std::swap(lo, hi);
    if (lo.get<double>() + 12 > hi.get<double>()) hi = lo.get<double>() + 12;
    const size_t form = Pick(4);
    if (form != 1) (*s)[Pick(3) == 0 ? "exclusiveMinimum" : "minimum"] = lo;
    if (form != 2) (*s)[Pick(3) == 0 ? "exclusiveMaximum" : "maximum"] = hi;
    if (Pick(3) == 0) (*s)["multipleOf"] = integer ? OrderedJson(1 + Pick(3)) : OrderedJson(Pick(2) ? 0.25 : 0.5);
  }

  void StringKeywords(OrderedJson* s) {
    static const char* kPatterns[] = {"^[a-z]{2,6}$", "^[0-9]{3}-[0-9]{2}$", "^(on|off|auto)$", "[A-Z]", "^\\d+(\\.\\d{1,2})?$",
                                      "^[^<>]{1,10}$", "^(?:kitchen|living room|bedroom)( [0-9])?$", "x+y*z?"};
    (*s)["type"] = "string";
    switch (Pick(5)) {
      case 0: (*s)["pattern"] = kPatterns[Pick(8)]; break;
      case 1: (*s)["format"] = Pick(2) ? "date" : "time"; break;
      case 2: {  // a pattern beside length bounds every one of these patterns can meet
        static const char* kBounded[] = {"[A-Z]", "x+y*z?", "^[^<>]{1,10}$", "^[a-z]{2,6}$", "^(?:kitchen|hall)( [0-9])?$"};
        (*s)["pattern"] = kBounded[Pick(5)];
        if (Pick(2)) (*s)["minLength"] = Pick(3);
        if (Pick(3)) (*s)["maxLength"] = 6 + Pick(8);
        break;
      }
      default: {
        const uint64_t lo = Pick(6);
        if (Pick(2)) (*s)["minLength"] = lo;
        if (Pick(2)) (*s)["maxLength"] = lo + Pick(12);
      }
    }
  }

  // A type list of two scalar types (sometimes with "null"), each type taking its own keywords
  // (lengths for strings, a range for numbers). The template prints the list as Python's str().
  void TypeList(OrderedJson* s) {
    static const char* kTypes[] = {"string", "integer", "number", "boolean"};
    const size_t first = Pick(4), second = (first + 1 + Pick(3)) % 4;
    OrderedJson types = OrderedJson::array({kTypes[first], kTypes[second]});
    if (Pick(3) == 0) types.push_back("null");
    for (size_t t : {first, second}) {
      if (t == 0 && Pick(2)) {
        (*s)["minLength"] = Pick(3);
        (*s)["maxLength"] = 3 + Pick(6);
      }
      if ((t == 1 || t == 2) && Pick(2)) {
        (*s)["minimum"] = Int(-50, 0);
        (*s)["maximum"] = Int(1, 50);
      }
    }
    (*s)["type"] = types;
  }

  // anyOf of two or three schemas (some starting alike: two strings, two numbers, two objects),
  // with or without null, or a type list. Branches hold no union themselves, so at most three are
  // open at once (the parser's bound is 4).
  void Union(OrderedJson* s, int depth) {
    if (Pick(3) == 0) {
      TypeList(s);
      return;
    }
    OrderedJson branches = OrderedJson::array();
    in_union_ = true;
    for (size_t i = 0, n = 2 + Pick(2); i < n; ++i) {
      OrderedJson b;
      const size_t kind = Pick(depth > 1 ? 5 : 7);
      AddKeywords(kind, &b, depth);
      branches.push_back(b);
    }
    in_union_ = false;
    if (Pick(3) == 0) branches.push_back({{"type", "null"}});
    s->erase("type");
    (*s)["anyOf"] = branches;
  }

  void AddKeywords(size_t kind, OrderedJson* s, int depth) {
    if (!in_union_ && Pick(6) == 0) {
      Union(s, depth);
      return;
    }
    switch (kind) {
      case 0:
      case 1: StringKeywords(s); break;
      case 2: NumberKeywords(true, s); break;
      case 3: NumberKeywords(false, s); break;
      case 4:
        (*s)["type"] = "boolean";
        if (Pick(2)) (*s)["const"] = Pick(2) == 0;
        break;
      case 5:
        (*s)["type"] = "array";
        (*s)["items"] = Schema(depth + 1);
        (*s)["minItems"] = Pick(3);
        if (Pick(2)) (*s)["maxItems"] = (*s)["minItems"].get<size_t>() + Pick(3);
        break;
      default: *s = Object(depth + 1); break;
    }
    if (Pick(5) == 0) (*s)["nullable"] = true;
  }

  std::mt19937 rng_;
  bool keywords_ = false;
  bool in_union_ = false;  // building a union's branches: no union inside
};

}  // namespace fgemma::test
