// Shared by `fgemma call` and `fgemma demo`: building a request and printing an outcome.
#pragma once

#include <string>

#include "runtime/function_caller.h"

namespace fgemma::cli {

struct CallInputs {
  std::string tools_path;
  std::string system;        // "" = FunctionGemma's default developer preamble
  std::string utterance;
  std::string tool_choice = "auto";
};

// Reads tools (an array, or an object with "tools") and builds {tools, messages}.
Result<ChatRequest> BuildCallRequest(const CallInputs& in);
Result<ToolChoice> ParseToolChoiceArg(const std::string& arg, const std::vector<Tool>& tools);

}  // namespace fgemma::cli
