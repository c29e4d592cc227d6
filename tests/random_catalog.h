// Random tool catalogs, arguments and utterances for constrained-decoding tests.
#pragma once

#include <random>
#include <string>

#include "chat/chat_json.h"
#include "util/json.h"

namespace fgemma::test {

class CatalogGenerator {
 public:
  explicit CatalogGenerator(uint32_t seed) : rng_(seed) {}

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
  std::mt19937 rng_;
};

}  // namespace fgemma::test
