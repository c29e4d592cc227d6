// How jinja2 (as Hugging Face configures it) treats the JSON values it renders: missing keys are
// Undefined (printing as "", iterating as nothing, erroring when subscripted), `{{ x }}` prints
// Python's str(x), `| dictsort` orders keys by str.lower() with ties kept in insertion order.
// The native renderer and the call formatter are written in these terms so that they reproduce the
// official template exactly, including for unusual values.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/chat_json.h"
#include "util/status.h"

namespace fgemma::jinja {

// A template value: a JSON node, or nullptr for Undefined.
using Value = const OrderedJson*;

// value[key]: the member of a mapping; Undefined for a missing key or a non-mapping (jinja2 turns
// the TypeError into Undefined). Subscripting Undefined itself is an error in jinja2: callers check.
Value Get(Value value, std::string_view key);

bool IsDefined(Value v);
bool IsString(Value v);
bool IsMapping(Value v);
bool IsNone(Value v);
bool IsBoolean(Value v);
// `is sequence` / `is iterable`: strings, lists and mappings.
bool IsSequence(Value v);
// Python truthiness: empty string/list/mapping, 0, false, None and Undefined are false.
bool Truthy(Value v);
// v == "text" (a JSON string with exactly these bytes).
bool Equals(Value v, std::string_view text);
// `key in container`: mapping key, substring, or list element; Undefined contains nothing.
Result<bool> Contains(Value container, std::string_view key);

// str(v) as `{{ v }}` prints it: strings as is, ints in decimal, floats as repr(), True/False/None,
// Undefined as "". Lists and mappings print as Python's str() of them for ASCII text (non-ASCII inside
// them: Unsupported, Python's printability rules are not reproduced).
Result<std::string> Str(Value v);
// `| upper` of str(v); only ASCII is reproduced (Python's upper has full Unicode case mappings).
Result<std::string> Upper(Value v);

// `for x in v`: list elements, mapping keys in insertion order, a string's code points, nothing for
// Undefined; anything else is not iterable.
Result<std::vector<OrderedJson>> Iterate(Value v);

// Calls fn(item, is_last) for each element as `for x in v` yields it (no copy for lists); stops at
// the first error.
template <typename Fn>
Status ForEach(Value v, Fn&& fn) {
  if (v != nullptr && v->is_array()) {
    for (size_t i = 0; i < v->size(); ++i) FGEMMA_RETURN_IF_ERROR(fn(&(*v)[i], i + 1 == v->size()));
    return Status::Ok();
  }
  FGEMMA_TRY(std::vector<OrderedJson> items, Iterate(v));
  for (size_t i = 0; i < items.size(); ++i) FGEMMA_RETURN_IF_ERROR(fn(&items[i], i + 1 == items.size()));
  return Status::Ok();
}

using Item = std::pair<std::string_view, Value>;
// `v | dictsort`: (key, value) pairs sorted by str.lower() of the key, stable.
Result<std::vector<Item>> DictSort(Value v);

}  // namespace fgemma::jinja
