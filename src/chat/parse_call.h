// Parsing FunctionGemma's output into function calls:
//   <start_function_call>call:NAME{key:value,...}<end_function_call>
// where a value is <escape>text<escape> (a string), a number or true/false as the template prints
// them, None, [v,...] or {key:value,...}; several calls may follow one another, text may stand
// around them, and the turn ends at <end_of_turn>, <start_function_response> or <eos>. Values are
// restored to JSON types guided by the declared schema (a bare 02134 for a string parameter stays
// "02134"; an <escape>5<escape> for an integer becomes 5), then checked against it. Nothing throws:
// malformed or truncated output gives a ParsedOutput whose status says where, with the raw text kept.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/request.h"
#include "util/json.h"
#include "util/status.h"

namespace fgemma {

struct ParsedCall {
  std::string name;
  Json arguments = Json::object();
  std::string raw;                  // the call as written, <start_function_call> to <end_function_call>
  size_t offset = 0;                // byte offset of `raw` in the output
  // Unknown function, schema violations ("arguments.room: expected string, got integer"), repeated keys.
  std::vector<std::string> errors;
  bool ok() const { return errors.empty(); }
};

struct ParsedOutput {
  std::string raw;                  // the whole output, always kept
  // OK, or why the output is malformed ("byte 41: output ends inside a string value ..."); the
  // first syntax error ends parsing.
  Status status;
  std::string text;                 // what stands outside the calls, up to the end-of-turn marker
  std::vector<ParsedCall> calls;    // the calls completed (closed by <end_function_call>) before any error
  bool ended_turn = false;          // an end-of-turn marker was seen (<end_of_turn>, <start_function_response>, <eos>)

  // Well-formed and every call valid.
  bool ok() const;
  // All problems, one per line: the syntax error, then "call 0 (set_lights): arguments...: ...".
  std::string ErrorSummary() const;
};

// Types values by, and checks calls against, `tools` (an unknown function name is an error).
ParsedOutput ParseModelOutput(std::string_view output, const std::vector<Tool>& tools);
// Without declarations: values typed by their syntax alone, no checks.
ParsedOutput ParseModelOutput(std::string_view output);

}  // namespace fgemma
