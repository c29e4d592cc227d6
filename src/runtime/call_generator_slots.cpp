// CallGenerator's reading of the utterance and the catalog for its guesses: the tool it names, where
// a call's arguments open the keys whose values it says, in an array of enum values the values
// to come, and in a string an earlier value's form with the utterance's numbers
// (call_generator_guess.cpp uses all four).
#include <algorithm>
#include <cctype>

#include "runtime/call_generator.h"
#include "runtime/utterance_match.h"

namespace fgemma {
namespace {
constexpr std::string_view kCall = "call:";
constexpr std::string_view kEscape = "<escape>";

// The values, in the schema's order, of the enum items of an array property named `key` (the first
// such property of the catalog), or null.
const std::vector<std::string>* ListedItems(const CallGrammar& grammar, std::string_view key) {
  const std::vector<CallGrammar::Node>& nodes = grammar.nodes();
  for (const CallGrammar::Node& object : nodes) {
    if (object.kind != CallGrammar::Kind::kObject) continue;
    const auto it = std::lower_bound(object.choices.begin(), object.choices.end(), key);
    if (it == object.choices.end() || *it != key) continue;
    const size_t i = static_cast<size_t>(it - object.choices.begin());
    if (i >= object.children.size() || object.children[i] < 0) continue;
    const CallGrammar::Node& array = nodes[static_cast<size_t>(object.children[i])];
    if (array.kind != CallGrammar::Kind::kArray || array.children.empty() || array.children[0] < 0) continue;
    const CallGrammar::Node& item = nodes[static_cast<size_t>(array.children[0])];
    if (item.kind == CallGrammar::Kind::kEnum) return &item.listed;
  }
  return nullptr;
}
}  // namespace

void CallGenerator::NameTool(std::string_view text, uint32_t guessers) {
  named_tool_.clear();
  const std::vector<std::string>& names = grammar_.function_names();
  if (names.size() < 2 || text.empty()) return;
  const std::vector<std::string> words = Words(text);
  std::vector<std::vector<std::string>> parts(names.size());
  for (size_t i = 0; i < names.size(); ++i) parts[i] = Words(names[i]);
  // A part shared by several names ("set") says less than one of a single name ("thermostat").
  double best = 0, second = 0;
  size_t best_i = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    double score = 0;
    for (const std::string& part : parts[i]) {
      if (std::none_of(words.begin(), words.end(), [&](const std::string& w) { return Names(w, part); })) continue;
      size_t df = 0;
      for (const auto& other : parts) df += std::find(other.begin(), other.end(), part) != other.end() ? 1 : 0;
      // A part of two letters ("on" of turn_on_flashlight) is an everyday word of utterances ("in my
      // calendar on 2026-10-26"): it tells two names apart ("torch on") but counts half.
      const double weight = (guessers & kGuessShortParts) && part.size() <= 2 ? 0.5 : 1.0;
      score += weight / static_cast<double>(std::max<size_t>(df, 1));
    }
    if (score > best) {
      second = best;
      best = score;
      best_i = i;
    } else if (score > second) {
      second = score;
    }
  }
  if (best > 0 && best > second) named_tool_ = names[best_i];
}

void CallGenerator::SlotGuesses(std::string_view hyp, std::string_view utterance) {
  slot_guesses_.clear();
  const size_t at = hyp.rfind(kCall), open = hyp.rfind('{');
  if (at == std::string_view::npos || open == std::string_view::npos || open < at) return;
  const std::string_view name = hyp.substr(at + kCall.size(), open - at - kCall.size());
  const std::vector<std::string>& names = grammar_.function_names();
  const auto it = std::lower_bound(names.begin(), names.end(), name);
  if (it == names.end() || *it != name) return;
  const int params = grammar_.function_params(static_cast<size_t>(it - names.begin()));
  if (params < 0) return;
  const CallGrammar::Node& object = grammar_.nodes()[static_cast<size_t>(params)];
  if (object.kind != CallGrammar::Kind::kObject) return;
  // A number is a numeric key's value when it is the utterance's only number and the function's only
  // numeric key ("set the kitchen lights to 40": brightness), not a part of a time ("6:30").
  const std::vector<std::string_view> numbers = Numbers(utterance);
  size_t numeric_keys = 0;
  for (int child : object.children) {
    const CallGrammar::Kind kind = child >= 0 ? grammar_.nodes()[static_cast<size_t>(child)].kind : CallGrammar::Kind::kAny;
    numeric_keys += kind == CallGrammar::Kind::kInteger || kind == CallGrammar::Kind::kNumber ? 1 : 0;
  }
  const bool time_like = utterance.find(':') != std::string_view::npos;
  // "key:value" in the keys' (sorted) order (a boolean key the utterance names is true); an optional
  // key the utterance does not say is left out, a required one ends the guess with its name ("on:"
  // of set_lights: its value is not said).
  std::vector<std::string> pairs;
  std::vector<bool> open_end;  // per pair: a required key's name only (the guess ends there)
  for (size_t i = 0; i < object.choices.size() && i < object.children.size(); ++i) {
    const int child = object.children[i];
    if (child < 0) continue;
    const CallGrammar::Node& node = grammar_.nodes()[static_cast<size_t>(child)];
    const size_t before = pairs.size();
    if (node.kind == CallGrammar::Kind::kEnum) {
      for (const std::string& v : node.choices) {
        if (!SaysValue(utterance, v)) continue;
        pairs.push_back(object.choices[i] + ":<escape>" + v + "<escape>");
        break;
      }
    } else if (node.kind == CallGrammar::Kind::kBoolean && SaysValue(utterance, object.choices[i])) {
      pairs.push_back(object.choices[i] + ":true");  // the key said ("shuffle my playlist", "turn on")
    } else if ((node.kind == CallGrammar::Kind::kInteger || node.kind == CallGrammar::Kind::kNumber) &&
               numeric_keys == 1 && numbers.size() == 1 && !time_like &&
               (node.kind == CallGrammar::Kind::kNumber || numbers[0].find('.') == std::string_view::npos)) {
      pairs.push_back(object.choices[i] + ":" + std::string(numbers[0]));
    }
    const bool name_only = pairs.size() == before && i < 64 && (object.required_mask >> i & 1) != 0;
    if (name_only) pairs.push_back(object.choices[i] + ":");
    open_end.resize(pairs.size(), name_only);
  }
  // One guess from each key on: the grammar takes the first whose key may come next.
  for (size_t i = 0; i < pairs.size(); ++i) {
    std::string guess;
    size_t k = i;
    for (; k < pairs.size(); ++k) {
      guess += (k == i ? "" : ",") + pairs[k];
      if (open_end[k]) break;
    }
    slot_guesses_.push_back(k < pairs.size() ? guess : guess + "}");
  }
}

namespace {
// A form FormGuess fills: digits with separators, a letter at most alone between them (the "T" of
// a date-time); not words ("12 Harbour Road": its number is no more than a part of the text).
bool DigitForm(std::string_view value) {
  for (size_t i = 0; i + 1 < value.size(); ++i)
    if (std::isalpha(static_cast<unsigned char>(value[i])) && std::isalpha(static_cast<unsigned char>(value[i + 1])))
      return false;
  return true;
}
}  // namespace

void CallGenerator::FormGuess(std::span<const std::string> earlier, std::string_view utterance) {
  form_guess_.clear();
  // The string being written: "key:<escape>" then what is written of it so far.
  const size_t open = hyp_.rfind(kEscape);
  if (open == std::string::npos || open == 0 || hyp_[open - 1] != ':') return;
  const size_t key_start = hyp_.find_last_of("{,", open);
  if (key_start == std::string::npos) return;
  const std::string_view so_far = std::string_view(hyp_).substr(open + kEscape.size());
  // "{key:<escape>" or ",key:<escape>" in an earlier output, most recent first: the same key's value.
  const std::string_view pattern = std::string_view(hyp_).substr(key_start + 1, open + kEscape.size() - key_start - 1);
  for (const std::string& output : earlier) {
    for (size_t at = output.find(pattern); at != std::string::npos; at = output.find(pattern, at + 1)) {
      if (at == 0 || (output[at - 1] != '{' && output[at - 1] != ',')) continue;
      const size_t from = at + pattern.size(), to = output.find(kEscape, from);
      if (to == std::string::npos) break;
      const std::string_view value = std::string_view(output).substr(from, to - from);
      if (!DigitForm(value) || !FillDigits(value, utterance, &form_guess_) || form_guess_ == value ||
          !std::string_view(form_guess_).starts_with(so_far)) {
        form_guess_.clear();  // no digit form, the same value, or digits written that the utterance's differ from
        break;
      }
      form_guess_.erase(0, so_far.size());
      form_guess_ += kEscape;
      return;
    }
  }
}

void CallGenerator::ListGuess(std::string_view hyp, std::string_view utterance) {
  list_guess_.clear();
  // The open array: "key:[" then its items so far ("<escape>mon<escape>,<escape>tue<escape>").
  // The text is checked first: the catalog and the utterance only while an array is open (once it
  // has closed, every later lookup of the call still finds its ":[").
  const size_t open = hyp.rfind(":[");
  if (open == std::string_view::npos) return;
  const size_t key_start = hyp.find_last_of("{,", open);
  if (key_start == std::string_view::npos) return;
  std::string_view items = hyp.substr(open + 2);
  if (items.find(']') != std::string_view::npos) return;  // the array has closed
  size_t escapes = 0;
  for (size_t at = items.find(kEscape); at != std::string_view::npos; at = items.find(kEscape, at + 1)) ++escapes;
  bool comma = false, value_only = false;  // before the first guess: a ',' and its <escape>; only the value
  if (escapes % 2 == 1) {        // inside an item: only at its start
    if (!items.ends_with(kEscape)) return;
    value_only = true;
    items.remove_suffix(kEscape.size());
    if (items.ends_with(',')) items.remove_suffix(1);
  } else if (items.ends_with(',')) {
    items.remove_suffix(1);
  } else {
    comma = !items.empty();
  }
  const bool after_item = !items.empty();
  std::string_view last;         // the last item written
  if (after_item) {
    if (!items.ends_with(kEscape)) return;
    items.remove_suffix(kEscape.size());
    const size_t start = items.rfind(kEscape);
    if (start == std::string_view::npos) return;
    last = items.substr(start + kEscape.size());
  }
  const std::vector<std::string>* listed = ListedItems(grammar_, hyp.substr(key_start + 1, open - key_start - 1));
  if (listed == nullptr) return;
  for (const std::string& v : *listed)
    if (SaysValue(utterance, v)) return;  // "on monday and friday": the words say which
  size_t next = 0;               // the first value to guess: the one after the last item, in the schema's order
  if (after_item) {
    const auto it = std::find(listed->begin(), listed->end(), last);
    if (it == listed->end()) return;
    next = static_cast<size_t>(it - listed->begin()) + 1;
  }
  for (size_t k = next; k < listed->size(); ++k) {
    if (k > next || comma) list_guess_ += ',';
    if (k > next || !value_only) list_guess_ += kEscape;
    list_guess_ += (*listed)[k];
    list_guess_ += kEscape;
  }
}

}  // namespace fgemma
