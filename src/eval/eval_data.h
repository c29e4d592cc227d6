// Evaluation rows in the layout of Google's Mobile Actions dataset (FunctionGemma's fine-tuning
// example), one JSON object per line:
//   {"metadata": "train"|"eval",
//    "tools": [{"type": "function", "function": {...}}, ...],
//    "messages": [..., the prompt turns (user, optionally developer/system and earlier turns) ...,
//                 {"role": "assistant", "tool_calls": [{"type": "function", "function":
//                    {"name": ..., "arguments": "<JSON text>"}}]}   or   {"role": "assistant", "content": "..."}]}
// The last message is the expected answer: calls, or text when no call is expected. Every line is
// checked (whatever the split asked for), and errors name the file, the line and the field:
// "data.jsonl:17: messages[1].tool_calls[0].function.arguments: malformed JSON at byte 3: ...".
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "chat/request.h"
#include "util/json.h"
#include "util/status.h"

namespace fgemma {

struct ExpectedCall {
  std::string name;
  Json arguments = Json::object();  // decoded from the JSON text; compared as JSON values
};

struct EvalRow {
  size_t line = 0;                     // 1-based line of the file
  std::string split;                   // "train" or "eval"
  ChatRequest prompt;                  // tools + every message before the expected answer
  std::string tools_key;               // canonical JSON of `tools` (sorted keys): rows that share it share a catalog
  std::vector<ExpectedCall> expected;  // empty: no call expected
  std::string expected_text;           // the answer's text content ("" when none)
};

// Which rows to keep: "train", "eval" or "all".
struct EvalSelection {
  std::string split = "eval";
  size_t limit = 0;  // first N selected rows; 0 = all
};

// One line (without its newline). `where` prefixes errors ("data.jsonl:17").
Result<EvalRow> ParseEvalRow(std::string_view line, size_t line_number, const std::string& where);

// Every non-blank line of `text` (`source` names it in errors), then the selection. An unknown
// split and a selection without rows are errors too.
Result<std::vector<EvalRow>> ParseEvalData(std::string_view text, const std::string& source, const EvalSelection& selection);
Result<std::vector<EvalRow>> ReadEvalData(const std::string& path, const EvalSelection& selection);

}  // namespace fgemma
