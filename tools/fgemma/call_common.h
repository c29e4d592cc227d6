// Shared by `fgemma call` and `fgemma demo`: building a call request from the command line.
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

// Reads tools (an array, or an object with "tools") and builds the request: {tools, messages} and
// the tool_choice (no limits: the CLI runs each call to the end of its turn).
Result<CallRequest> BuildCallRequest(const CallInputs& in);

}  // namespace fgemma::cli
