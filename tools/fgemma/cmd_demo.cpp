// fgemma demo: the smart-home example on a synthesized FunctionGemma-shaped model.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

#include "call_common.h"
#include "command.h"
#include "model/synth.h"
#include "runtime/loaded_model.h"
#include "util/mapped_file.h"
#include "util/process_stats.h"

namespace fgemma::cli {
namespace {

std::string CacheDir() {
  if (const char* d = std::getenv("FGEMMA_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/fgemma";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/fgemma";
  return "/tmp/fgemma-cache";
}

// Repository assets (tokenizer, examples), overridable for installed binaries.
std::string AssetsRoot() {
  if (const char* d = std::getenv("FGEMMA_SOURCE_DIR"); d && *d) return d;
  return FGEMMA_SOURCE_DIR;
}

Status MakeDirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      const std::string p = path.substr(0, i);
      if (::mkdir(p.c_str(), 0755) != 0 && !IsDirectory(p)) return IoError(p + ": cannot create directory");
    }
  }
  return Status::Ok();
}

struct DemoArgs {
  std::string utterance = "Turn on the lights in the kitchen and dim them to 40 percent";
  int threads = 0;
};

int RunDemo(const DemoArgs& a) {
  const std::string cache = CacheDir();
  const std::string model_dir = cache + "/synth-270m-bf16";
  if (Status st = MakeDirs(cache); !st.ok()) return Fail(st.ToString());
  if (!FileExists(model_dir + "/config.json")) {
    std::fprintf(stderr, "synthesizing a FunctionGemma-shaped model (270m, random weights, 511 MiB) in %s ...\n", model_dir.c_str());
    const double t0 = NowSeconds();
    Status st = WriteSynthCheckpoint(ConfigByName("270m").value(), 270, DType::kBF16, model_dir + ".tmp");
    if (!st.ok()) return Fail(st.ToString());
    if (std::rename((model_dir + ".tmp").c_str(), model_dir.c_str()) != 0) return Fail("cannot move the synthesized model into place");
    std::fprintf(stderr, "done in %.1f s (cached for next time)\n", NowSeconds() - t0);
  }
  CallInputs in;
  in.tools_path = AssetsRoot() + "/examples/smart-home/tools.json";
  in.utterance = a.utterance;
  in.tool_choice = "required";
  auto request = BuildCallRequest(in);
  if (!request.ok()) return Fail(request.status().ToString());
  LoadOptions lo;
  lo.tokenizer_path = AssetsRoot() + "/assets/functiongemma/tokenizer.json";  // the synthesized model has none
  auto loaded = LoadModel(model_dir, lo);
  if (!loaded.ok()) return Fail(loaded.status().ToString());
  FunctionCallerOptions fo;
  fo.threads = a.threads;
  fo.cache_path = cache + "/smart-home.kvcache";
  auto caller = FunctionCaller::Create(loaded.value(), fo);
  if (!caller.ok()) return Fail(caller.status().ToString());

  std::printf("NOTE: this model has random weights (synthesized from SYNTH.md in FunctionGemma-270M's exact shape).\n"
              "      The call below is valid by construction (constrained decoding) but its content is noise;\n"
              "      only the real checkpoint gives meaningful calls. See README: \"Running the real model\".\n\n");
  std::printf("tools:     %s (%zu functions)\nutterance: %s\n\n", in.tools_path.c_str(), request->chat.tools.size(), a.utterance.c_str());
  for (const char* label : {"first request", "second request"}) {
    auto outcome = caller.value()->Call(request.value());
    for (const auto& w : caller.value()->TakeWarnings()) std::fprintf(stderr, "fgemma: warning: %s\n", w.c_str());
    if (!outcome.ok()) return Fail(outcome.status().ToString());
    const CallTiming& t = outcome->timing;
    std::printf("%s (catalog prefix: %s, %zu tokens, %.0f ms)\n", label, t.cache_source.c_str(), t.prefix_tokens, t.prefix_ms);
    std::printf("  %s\n", CallOutcomeToJson(outcome.value())["calls"].dump().c_str());
    std::printf("  total %.0f ms: %zu prompt tokens, %zu generated (%zu by jump-forward, %zu head steps, %zu restricted)\n\n",
                t.total_ms, t.prompt_tokens, t.generated_tokens, outcome->stats.forced_tokens, outcome->stats.head_steps,
                outcome->stats.restricted_steps);
  }
  return 0;
}

CommandRegistration reg(60, [](CLI::App& app) -> std::function<int()> {
  auto a = std::make_shared<DemoArgs>();
  auto* cmd = app.add_subcommand("demo", "Run the smart-home example on a synthesized FunctionGemma-shaped model");
  cmd->add_option("utterance", a->utterance, "what the user said");
  cmd->add_option("--threads", a->threads, "threads (default: all cores)");
  return [a] { return RunDemo(*a); };
});

}  // namespace
}  // namespace fgemma::cli
