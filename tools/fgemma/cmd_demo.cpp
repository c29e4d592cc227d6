// fgemma demo: the smart-home example on the real Gemma 3 270M when the cache holds it
// (scripts/fetch-real-model.sh), else on a synthesized FunctionGemma-shaped model.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include <cstdio>
#include <cstdlib>

#include "call_common.h"
#include "command.h"
#include "number_options.h"
#include "kernels/matmul.h"
#include "model/convert.h"
#include "model/synth.h"
#include "runtime/loaded_model.h"
#include "tokenizer/tokenizer.h"
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

// The demo's model: FunctionGemma-270M's exact shape with SYNTH.md's random weights, as the q8_0
// GGUF the product ships. Made once: synthesized in bf16 into a fresh private directory (mkdtemp:
// no fixed name another user could plant a link at), converted (written through a temporary file
// renamed into place), and the bf16 files removed.
Result<std::string> DemoModel(const std::string& cache) {
  const std::string gguf = cache + "/synth-270m-q8_0.gguf";
  if (FileExists(gguf)) return gguf;
  std::string scratch = cache + "/synth-270m-bf16.XXXXXX";
  if (::mkdtemp(scratch.data()) == nullptr) return IoError(scratch + ": cannot create a temporary directory: " + std::strerror(errno));
  struct RemoveAfter {
    std::string dir;
    ~RemoveAfter() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);  // removes links, never follows them
    }
  } remove_after{scratch};
  std::fprintf(stderr, "synthesizing a FunctionGemma-shaped model (270m, random weights) and converting it to q8_0 in %s ...\n",
               cache.c_str());
  const double t0 = NowSeconds();
  FGEMMA_RETURN_IF_ERROR(WriteSynthCheckpoint(ConfigByName("270m").value(), 270, DType::kBF16, scratch));
  // The converter takes the vocabulary from the checkpoint's directory.
  std::error_code ec;
  std::filesystem::copy_file(AssetsRoot() + "/assets/functiongemma/tokenizer.json", scratch + "/tokenizer.json", ec);
  if (ec) return IoError(scratch + "/tokenizer.json: cannot copy the tokenizer: " + ec.message());
  ConvertOptions co;
  co.type = DType::kQ8_0;
  co.name = "synth-270m";
  auto converted = ConvertToGguf(scratch, gguf, co);
  if (!converted.ok()) return converted.status();
  std::fprintf(stderr, "done in %.1f s: %s, %.0f MiB (cached for next time)\n", NowSeconds() - t0, gguf.c_str(),
               converted->file_bytes / 1048576.0);
  return gguf;
}

// The real Gemma 3 270M files the demo looks for under <cache>/real, best first: the fetched Q4_K_M,
// then the files llama.cpp's quantizer makes from it (docs/real-model.md).
constexpr const char* kRealModelFiles[] = {
    "gemma-3-270m-q4_k_m.gguf", "gemma-3-270m-q8_0.gguf", "gemma-3-270m-q6_k.gguf", "gemma-3-270m-q5_k_m.gguf",
    "gemma-3-270m-q5_1.gguf",   "gemma-3-270m-q5_0.gguf", "gemma-3-270m-q4_1.gguf", "gemma-3-270m-q4_0.gguf",
    "gemma-3-270m-bf16.gguf"};

// The first real file fgemma loads, with FunctionGemma's tokenizer (Gemma 3's ids, FunctionGemma's
// names for the unused ones) and official template (the base model's own is for plain chat). A file
// that is there but does not load (a type fgemma lacks) is said and passed over.
std::optional<std::pair<std::string, LoadedModel>> RealModel(const std::string& cache) {
  for (const char* name : kRealModelFiles) {
    const std::string path = cache + "/real/" + name;
    if (!FileExists(path)) continue;
    auto model = Model::Load(path);
    auto tokenizer = Tokenizer::FromFile(AssetsRoot() + "/assets/functiongemma/tokenizer.json");
    if (model.ok() && tokenizer.ok()) {
      ModelTemplate official{TemplateKind::kOfficial, "FunctionGemma's official template"};
      auto loaded = LoadedModel::FromParts(std::move(model).value(), std::move(tokenizer).value(), official, path);
      if (loaded.ok()) return std::make_pair(path, std::move(loaded).value());
      model = loaded.status();
    }
    std::fprintf(stderr, "fgemma: note: %s is there but does not load: %s\n", path.c_str(),
                 (model.ok() ? tokenizer.status() : model.status()).ToString().c_str());
  }
  return std::nullopt;
}

int RunDemo(const DemoArgs& a) {
  const std::string cache = CacheDir();
  if (Status st = MakeDirs(cache); !st.ok()) return Fail(st.ToString());
  auto real = RealModel(cache);
  Result<std::string> model_path = real ? real->first : DemoModel(cache);
  if (!model_path.ok()) return Fail(model_path.status().ToString());
  CallInputs in;
  in.tools_path = AssetsRoot() + "/examples/smart-home/tools.json";
  in.utterance = a.utterance;
  in.tool_choice = "required";
  auto request = BuildCallRequest(in);
  if (!request.ok()) return Fail(request.status().ToString());
  auto loaded = real ? Result<LoadedModel>(std::move(real->second)) : LoadModel(model_path.value(), LoadOptions{});
  if (!loaded.ok()) return Fail(loaded.status().ToString());
  FunctionCallerOptions fo;
  fo.threads = a.threads;
  fo.cache_path = cache + "/smart-home.kvcache";
  auto caller = FunctionCaller::Create(loaded.value(), fo);
  if (!caller.ok()) return Fail(caller.status().ToString());

  if (real) {
    std::printf("NOTE: the real Gemma 3 270M (trained weights, from the cache): the base model FunctionGemma-270M was\n"
                "      fine-tuned from, not FunctionGemma itself. Constrained decoding keeps the call valid; what it\n"
                "      chooses is the untuned model's guess (docs/real-model.md).\n\n");
  } else {
    std::printf("NOTE: this model has random weights (`fgemma synth --config 270m`: FunctionGemma-270M's exact shape).\n"
                "      The call below is valid by construction (constrained decoding) but its content is noise;\n"
                "      run scripts/fetch-real-model.sh for the real Gemma 3 270M (docs/real-model.md).\n\n");
  }
  std::printf("model:     %s (%s, kernels %s)\ntools:     %s (%zu functions)\nutterance: %s\n\n", model_path->c_str(),
              real ? "real Gemma 3 270M" : "q8_0", KernelTargetName(), in.tools_path.c_str(),
              request->chat.tools.size(), a.utterance.c_str());
  for (const char* label : {"first request", "second request"}) {
    auto outcome = caller.value()->Call(request.value());
    for (const auto& w : caller.value()->TakeWarnings()) std::fprintf(stderr, "fgemma: warning: %s\n", w.c_str());
    if (!outcome.ok()) return Fail(outcome.status().ToString());
    const CallTiming& t = outcome->timing;
    std::printf("%s (catalog prefix: %s, %zu tokens, %.0f ms)\n", label, t.cache_source.c_str(), t.prefix_tokens, t.prefix_ms);
    std::printf("  %s\n", CallOutcomeToJson(outcome.value())["calls"].dump().c_str());
    const ConstrainedStats& s = outcome->stats;
    std::printf("  total %.0f ms, %zu passes over the weights: %zu prompt tokens, %zu generated\n"
                "  speed-ups: catalog prefix %s; %zu prompt tokens kept from the previous request;\n"
                "             %zu tokens by jump-forward (no pass); %zu guessed tokens checked in the same passes,\n"
                "             %zu confirmed; %zu of %zu head steps restricted to the tokens the grammar allows\n\n",
                t.total_ms, s.model_calls, t.prompt_tokens, t.generated_tokens,
                t.cache_hit ? "restored, not recomputed" : "computed (kept for the next call)", t.reused_tokens,
                s.forced_tokens, s.drafted_tokens, s.accepted_tokens, s.restricted_steps, s.head_steps);
  }
  return 0;
}

const CommandRegistration kDemo(60, [](CLI::App& app) -> std::function<int()> {
  auto a = std::make_shared<DemoArgs>();
  auto* cmd = app.add_subcommand("demo", "Run the smart-home example on the real Gemma 3 270M when fetched, else on a synthesized FunctionGemma-shaped model");
  cmd->add_option("utterance", a->utterance, "what the user said");
  AddThreadsOption(cmd, &a->threads, "threads (default: all cores)");
  return [a] { return RunDemo(*a); };
});

}  // namespace
}  // namespace fgemma::cli
