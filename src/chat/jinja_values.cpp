#include "chat/jinja_values.h"

#include <algorithm>

#include "chat/py_text.h"

namespace fgemma::jinja {

Value Get(Value value, std::string_view key) {
  if (value == nullptr || !value->is_object()) return nullptr;
  auto it = value->find(std::string(key));
  return it == value->end() ? nullptr : &*it;
}

bool IsDefined(Value v) { return v != nullptr; }
bool IsString(Value v) { return v != nullptr && v->is_string(); }
bool IsMapping(Value v) { return v != nullptr && v->is_object(); }
bool IsNone(Value v) { return v != nullptr && v->is_null(); }
bool IsBoolean(Value v) { return v != nullptr && v->is_boolean(); }
bool IsSequence(Value v) { return v != nullptr && (v->is_string() || v->is_array() || v->is_object()); }

bool Truthy(Value v) {
  if (v == nullptr) return false;
  switch (v->type()) {
    case OrderedJson::value_t::null: return false;
    case OrderedJson::value_t::boolean: return v->get<bool>();
    case OrderedJson::value_t::number_integer: return v->get<int64_t>() != 0;
    case OrderedJson::value_t::number_unsigned: return v->get<uint64_t>() != 0;
    case OrderedJson::value_t::number_float: return v->get<double>() != 0.0;
    case OrderedJson::value_t::string: return !v->get_ref<const std::string&>().empty();
    case OrderedJson::value_t::array:
    case OrderedJson::value_t::object: return !v->empty();
    default: return true;
  }
}

bool Equals(Value v, std::string_view text) { return IsString(v) && v->get_ref<const std::string&>() == text; }

Result<bool> Contains(Value container, std::string_view key) {
  if (container == nullptr) return false;
  if (container->is_object()) return container->contains(std::string(key));
  if (container->is_string()) return container->get_ref<const std::string&>().find(key) != std::string::npos;
  if (container->is_array()) {
    for (const auto& e : *container) {
      if (Equals(&e, key)) return true;
    }
    return false;
  }
  return InvalidArgument(std::string("argument of type '") + JsonKindName(*container) + "' is not iterable");
}

namespace {

// Python's repr() of a JSON value, as str() of a list or dict writes its elements. Strings are
// written as Python does for ASCII text (quotes chosen as Python chooses them, \\ \t \n \r and
// other control bytes escaped); non-ASCII text inside a container would need Python's Unicode
// printability tables and is refused instead of guessed.
Result<std::string> PyRepr(const OrderedJson& v) {
  switch (v.type()) {
    case OrderedJson::value_t::string: {
      const std::string& text = v.get_ref<const std::string&>();
      const bool double_quoted = text.find('\'') != std::string::npos && text.find('"') == std::string::npos;
      const char quote = double_quoted ? '"' : '\'';
      std::string out(1, quote);
      for (unsigned char c : text) {
        if (c >= 0x80) return Unsupported("printing non-ASCII text inside a JSON list or object is not supported");
        if (c == '\\' || c == static_cast<unsigned char>(quote)) {
          out += '\\';
          out += static_cast<char>(c);
        } else if (c == '\t') {
          out += "\\t";
        } else if (c == '\n') {
          out += "\\n";
        } else if (c == '\r') {
          out += "\\r";
        } else if (c < 0x20 || c == 0x7f) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
      }
      return out + quote;
    }
    case OrderedJson::value_t::array: {
      std::string out = "[";
      for (size_t i = 0; i < v.size(); ++i) {
        FGEMMA_TRY(std::string element, PyRepr(v[i]));
        out += (i ? ", " : "") + element;
      }
      return out + "]";
    }
    case OrderedJson::value_t::object: {
      std::string out = "{";
      bool first = true;
      for (const auto& [key, value] : v.items()) {
        FGEMMA_TRY(std::string k, PyRepr(OrderedJson(key)));
        FGEMMA_TRY(std::string e, PyRepr(value));
        out += (first ? "" : ", ") + k + ": " + e;
        first = false;
      }
      return out + "}";
    }
    default:
      return Str(&v);
  }
}

}  // namespace

Result<std::string> Str(Value v) {
  if (v == nullptr) return std::string();
  switch (v->type()) {
    case OrderedJson::value_t::null: return std::string("None");
    case OrderedJson::value_t::boolean: return std::string(v->get<bool>() ? "True" : "False");
    case OrderedJson::value_t::number_integer: return std::to_string(v->get<int64_t>());
    case OrderedJson::value_t::number_unsigned: return std::to_string(v->get<uint64_t>());
    case OrderedJson::value_t::number_float: return py::FloatRepr(v->get<double>());
    case OrderedJson::value_t::string: return v->get<std::string>();
    case OrderedJson::value_t::array:
    case OrderedJson::value_t::object: return PyRepr(*v);  // str() of a list or dict, as Jinja prints it
    default:
      return Unsupported(std::string("printing a JSON ") + JsonKindName(*v) + " where the template expects text is not supported");
  }
}

Result<std::string> Upper(Value v) {
  FGEMMA_TRY(std::string s, Str(v));
  for (char& c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return Unsupported("upper-casing non-ASCII text '" + s + "' is not supported");
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  }
  return s;
}

Result<std::vector<OrderedJson>> Iterate(Value v) {
  std::vector<OrderedJson> out;
  if (v == nullptr) return out;
  if (v->is_array()) {
    out.assign(v->begin(), v->end());
  } else if (v->is_object()) {
    for (const auto& [key, value] : v->items()) out.emplace_back(key);
  } else if (v->is_string()) {
    for (std::string_view cp : py::CodePoints(v->get_ref<const std::string&>())) out.emplace_back(std::string(cp));
  } else {
    return InvalidArgument(std::string("'") + JsonKindName(*v) + "' object is not iterable");
  }
  return out;
}

Result<std::vector<Item>> DictSort(Value v) {
  if (!IsMapping(v)) {
    return InvalidArgument(std::string("dictsort needs a mapping, got ") + (v ? JsonKindName(*v) : "undefined"));
  }
  struct Keyed {
    std::string lowered;
    Item item;
  };
  std::vector<Keyed> keyed;
  keyed.reserve(v->size());
  for (auto it = v->begin(); it != v->end(); ++it) {
    keyed.push_back({py::Lower(it.key()), {it.key(), &it.value()}});
  }
  // Byte order of UTF-8 equals code point order, which is how Python compares str.
  std::stable_sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) { return a.lowered < b.lowered; });
  std::vector<Item> out;
  out.reserve(keyed.size());
  for (auto& k : keyed) out.push_back(k.item);
  return out;
}

}  // namespace fgemma::jinja
