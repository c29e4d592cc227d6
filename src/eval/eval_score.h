// Scoring one evaluation row (expected calls vs the parsed output) and the report over many.
//
// Definitions (docs/eval.md documents them for users):
//  - a row is valid when its output parsed, every call named a declared function and met its
//    schema, and the turn ended (constrained decoding always gives valid rows);
//  - exact: a valid row whose calls equal the expected ones, name and arguments as JSON values
//    (1 == 1.0, key order ignored), in any order; a row expecting no call is exact when it made none;
//  - names: a row expecting calls whose called names equal the expected names (as multisets);
//  - argument pairs: every top-level argument of a call is a pair (function, key, value); a
//    generated pair matches an expected pair of the same row with the same function, key and value.
//    Precision = matched / generated pairs, recall = matched / expected pairs, over all rows;
//  - no-call accuracy: rows expecting no call that made none, over rows expecting no call.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "chat/parse_call.h"
#include "eval/eval_data.h"
#include "util/json.h"

namespace fgemma {

struct RowScore {
  bool expects_call = false;
  bool valid = true;
  bool exact = false;
  bool names = false;  // meaningful when expects_call
  size_t args_expected = 0, args_generated = 0, args_matched = 0;
};

// Tallies of one function name over the rows.
struct FunctionTally {
  size_t expected = 0;      // expected calls
  size_t generated = 0;     // generated calls
  size_t name_matched = 0;  // per row, min(expected, generated) calls of it
  size_t exact = 0;         // expected calls matched by an equal generated call
  size_t args_expected = 0, args_generated = 0, args_matched = 0;
};

struct EvalTotals {
  size_t rows = 0, call_rows = 0, no_call_rows = 0;
  size_t exact = 0, call_rows_exact = 0, names = 0, no_call_correct = 0, invalid = 0;
  size_t args_expected = 0, args_generated = 0, args_matched = 0;
  size_t prompt_tokens = 0, generated_tokens = 0;
  // Passes over the model (the first prefills the row's turn), tokens guessed by drafts and confirmed.
  size_t passes = 0, drafted_tokens = 0, accepted_tokens = 0;
  std::map<std::string, FunctionTally> functions;  // by name (expected or generated)
};

// Scores `got` against `expected`; adds to *functions when given.
RowScore ScoreRow(const std::vector<ExpectedCall>& expected, const ParsedOutput& got,
                  std::map<std::string, FunctionTally>* functions = nullptr);
void AddScore(const RowScore& score, EvalTotals* totals);

// Nearest-rank percentile (p in (0, 100]) of `values`; 0 when empty.
double Percentile(std::vector<double> values, double p);

}  // namespace fgemma
