// fgemma bench --calls: warm function calls on a catalog, with and without speculative drafts.
#pragma once

#include <string>
#include <vector>

#include "runtime/call_request.h"
#include "util/status.h"

namespace fgemma::cli {

struct CallBenchArgs {
  std::string model, tools, calls;  // calls: JSON lines {"utterance":..., "output":...}
  std::string tool_choice = "auto";
  int threads = 0;
  size_t rounds = 3;                // timed passes over the whole set (after one untimed)
  bool json = false;
  // Drafting knobs (0: the library's defaults) and a per-pass trace of the drafts (stderr) with a
  // per-source summary, over the first timed round.
  size_t max_draft = 0, draft_lookups = 0;
  int draft_guessers = -1;  // ConstrainedOptions::draft_guessers mask (-1: all)
  bool trace_drafts = false;
  bool no_prompt_reuse = false;  // FunctionCallerOptions::reuse_prompt off in every mode
  // A trained model writes its own calls (the set's outputs are ignored) and they are printed.
  bool own_calls = false;
  std::string tokenizer;  // instead of the model's own vocabulary (a base model: FunctionGemma's)
  // --clients: concurrent callers (one per client, as the server's sessions) instead, with and
  // without batched passes; each count in turn.
  std::vector<size_t> clients;
};

int RunCallBench(const CallBenchArgs& a);
int RunClientsBench(const CallBenchArgs& a);

// A call of the set: the utterance and the output a real model writes for it.
struct BenchCase {
  std::string utterance, output;
};
Result<std::vector<BenchCase>> ReadBenchCases(const std::string& path);
// The request of each case: its utterance against a.tools under a.tool_choice.
Result<std::vector<CallRequest>> BenchRequests(const CallBenchArgs& a, const std::vector<BenchCase>& cases);
// Nearest-rank percentile p in [0, 1] of v (0 when empty).
double Percentile(std::vector<double> v, double p);

}  // namespace fgemma::cli
