#include "eval/eval_score.h"

#include <algorithm>
#include <cmath>

namespace fgemma {
namespace {

struct Pair {
  const std::string* function;
  const std::string* key;
  const Json* value;
};

void AppendPairs(const std::string& function, const Json& arguments, std::vector<Pair>* out) {
  if (!arguments.is_object()) return;
  for (auto it = arguments.begin(); it != arguments.end(); ++it) out->push_back({&function, &it.key(), &it.value()});
}

bool SamePair(const Pair& a, const Pair& b) { return *a.function == *b.function && *a.key == *b.key && *a.value == *b.value; }

// Greedy one-to-one matching of `generated` items to `expected` ones under `same`; returns, per
// expected item, whether it was matched. Exact for equality (an equivalence), whatever the order.
template <typename E, typename G, typename Same>
std::vector<bool> MatchItems(const std::vector<E>& expected, const std::vector<G>& generated, Same same) {
  std::vector<bool> matched(expected.size(), false), used(generated.size(), false);
  for (size_t e = 0; e < expected.size(); ++e) {
    for (size_t g = 0; g < generated.size(); ++g) {
      if (!used[g] && same(expected[e], generated[g])) {
        used[g] = matched[e] = true;
        break;
      }
    }
  }
  return matched;
}

}  // namespace

RowScore ScoreRow(const std::vector<ExpectedCall>& expected, const ParsedOutput& got, std::map<std::string, FunctionTally>* functions) {
  RowScore s;
  s.expects_call = !expected.empty();
  s.valid = got.ok();
  const std::vector<ParsedCall>& calls = got.calls;

  const auto exact_calls = MatchItems(expected, calls, [](const ExpectedCall& e, const ParsedCall& g) {
    return e.name == g.name && e.arguments == g.arguments;
  });
  const auto named = MatchItems(expected, calls, [](const ExpectedCall& e, const ParsedCall& g) { return e.name == g.name; });
  const size_t exact_count = static_cast<size_t>(std::count(exact_calls.begin(), exact_calls.end(), true));
  const size_t named_count = static_cast<size_t>(std::count(named.begin(), named.end(), true));
  s.exact = s.valid && calls.size() == expected.size() && exact_count == expected.size();
  s.names = s.expects_call && calls.size() == expected.size() && named_count == expected.size();

  std::vector<Pair> want, have;
  for (const auto& e : expected) AppendPairs(e.name, e.arguments, &want);
  for (const auto& g : calls) AppendPairs(g.name, g.arguments, &have);
  const auto pair_hits = MatchItems(want, have, SamePair);
  s.args_expected = want.size();
  s.args_generated = have.size();
  s.args_matched = static_cast<size_t>(std::count(pair_hits.begin(), pair_hits.end(), true));

  if (functions != nullptr) {
    for (size_t e = 0; e < expected.size(); ++e) {
      FunctionTally& f = (*functions)[expected[e].name];
      ++f.expected;
      f.name_matched += named[e] ? 1 : 0;
      f.exact += exact_calls[e] && s.valid ? 1 : 0;
    }
    for (const auto& g : calls) ++(*functions)[g.name].generated;
    for (size_t p = 0; p < want.size(); ++p) {
      FunctionTally& f = (*functions)[*want[p].function];
      ++f.args_expected;
      f.args_matched += pair_hits[p] ? 1 : 0;
    }
    for (const auto& p : have) ++(*functions)[*p.function].args_generated;
  }
  return s;
}

void AddScore(const RowScore& s, EvalTotals* t) {
  ++t->rows;
  if (s.expects_call) {
    ++t->call_rows;
    t->call_rows_exact += s.exact ? 1 : 0;
    t->names += s.names ? 1 : 0;
  } else {
    ++t->no_call_rows;
    t->no_call_correct += s.exact ? 1 : 0;
  }
  t->exact += s.exact ? 1 : 0;
  t->invalid += s.valid ? 0 : 1;
  t->args_expected += s.args_expected;
  t->args_generated += s.args_generated;
  t->args_matched += s.args_matched;
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
  const size_t index = rank < 1 ? 0 : std::min(values.size() - 1, static_cast<size_t>(rank) - 1);
  return values[index];
}

}  // namespace fgemma
