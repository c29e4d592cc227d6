// fgemma bench --calls: warm function calls on a catalog, with and without speculative drafts.
#pragma once

#include <string>

namespace fgemma::cli {

struct CallBenchArgs {
  std::string model, tools, calls;  // calls: JSON lines {"utterance":..., "output":...}
  std::string tool_choice = "auto";
  int threads = 0;
  size_t rounds = 3;                // timed passes over the whole set (after one untimed)
  bool json = false;
};

int RunCallBench(const CallBenchArgs& a);

}  // namespace fgemma::cli
