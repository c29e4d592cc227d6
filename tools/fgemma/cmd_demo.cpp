// fgemma demo: with the real Gemma 3 270M in the cache (scripts/fetch-real-model.sh), the
// phone-actions cartridge on a few phone utterances; else the smart-home example on a synthesized
// FunctionGemma-shaped model.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include <cstdio>
#include <cstdlib>

#include "call_common.h"
#include "command.h"
#include "lora_option.h"
#include "number_options.h"
#include "kernels/matmul.h"
#include "convert/convert.h"
#include "model/synth.h"
#include "runtime/engine.h"
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
  bool utterance_given = false;  // else the cartridge's demo says its own phone utterances
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

// What the demo runs: a catalog, the utterances said to it, and the adapter over the base.
struct DemoPlan {
  std::string tools_path, tool_choice, cache_name, lora;
  std::vector<std::string> utterances;
};

// The real base with the phone-actions cartridge (cartridges/phone-actions: LoRA + catalog) when
// both are there: the calls a trained cartridge makes. Otherwise the smart-home catalog under
// tool_choice required, the same utterance twice (cold, then warm).
DemoPlan PlanDemo(const DemoArgs& a, bool real) {
  const std::string cartridge = AssetsRoot() + "/cartridges/phone-actions";
  if (real && FileExists(cartridge + "/adapter_model.safetensors") && FileExists(cartridge + "/tools.json")) {
    DemoPlan p{cartridge + "/tools.json", "auto", "phone-actions.kvcache", cartridge, {}};
    if (a.utterance_given) {
      p.utterances = {a.utterance};
    } else {
      // Phrased as the cartridge's training rows are (its README lists phrasings it gets wrong).
      p.utterances = {"Turn on the flashlight", "Volume to 30 percent",
                      "Email ana@example.com with the subject \"Lunch\" saying See you at noon.",
                      "Show me the way to the train station", "tell me a joke"};
    }
    return p;
  }
  return {AssetsRoot() + "/examples/smart-home/tools.json", "required", "smart-home.kvcache", "", {a.utterance, a.utterance}};
}

void PrintOutcome(const std::string& label, const CallOutcome& outcome) {
  const CallTiming& t = outcome.timing;
  const Json j = CallOutcomeToJson(outcome);
  std::printf("%s (catalog prefix: %s, %zu tokens, %.0f ms)\n", label.c_str(), t.cache_source.c_str(), t.prefix_tokens, t.prefix_ms);
  std::printf("  %s\n", j["calls"].empty() && j.contains("text") ? ("text: " + j["text"].dump()).c_str() : j["calls"].dump().c_str());
  const ConstrainedStats& s = outcome.stats;
  std::printf("  total %.0f ms, %zu passes over the weights: %zu prompt tokens, %zu generated\n"
              "  speed-ups: catalog prefix %s; %zu prompt tokens kept from the previous request;\n"
              "             %zu tokens by jump-forward (no pass); %zu guessed tokens checked in the same passes,\n"
              "             %zu confirmed; %zu of %zu head steps restricted to the tokens the grammar allows\n\n",
              t.total_ms, s.model_calls, t.prompt_tokens, t.generated_tokens,
              t.cache_hit ? "restored, not recomputed" : "computed (kept for the next call)", t.reused_tokens, s.forced_tokens,
              s.drafted_tokens, s.accepted_tokens, s.restricted_steps, s.head_steps);
}

int RunDemo(const DemoArgs& a) {
  const std::string cache = CacheDir();
  if (Status st = MakeDirs(cache); !st.ok()) return Fail(st.ToString());
  auto real = RealModel(cache);
  Result<std::string> model_path = real ? real->first : DemoModel(cache);
  if (!model_path.ok()) return Fail(model_path.status().ToString());
  const DemoPlan plan = PlanDemo(a, real.has_value());
  auto loaded = real ? Result<LoadedModel>(std::move(real->second)) : LoadModel(model_path.value(), LoadOptions{});
  if (!loaded.ok()) return Fail(loaded.status().ToString());
  EngineConfig config;
  config.threads = a.threads;
  config.cache_path = cache + "/" + plan.cache_name;
  auto lora = AdapterSpecOf(plan.lora);
  if (!lora.ok()) return Fail(lora.status().ToString());
  config.lora = lora.value();
  const std::unique_ptr<Engine> engine = Engine::Create(std::move(loaded).value(), config);
  auto caller = engine->NewCaller();
  if (!caller.ok()) return Fail(caller.status().ToString());
  const bool adapted = caller.value()->options().lora != nullptr;

  if (real && adapted) {
    std::printf("NOTE: the real Gemma 3 270M (trained weights, from the cache) with the phone-actions cartridge\n"
                "      (cartridges/phone-actions: a LoRA adapter trained by examples/fine-tune, and its catalog).\n\n");
  } else if (real) {
    std::printf("NOTE: the real Gemma 3 270M (trained weights, from the cache): the base model FunctionGemma-270M was\n"
                "      fine-tuned from, not FunctionGemma itself. Constrained decoding keeps the call valid; what it\n"
                "      chooses is the untuned model's guess (docs/real-model.md).\n\n");
  } else {
    std::printf("NOTE: this model has random weights (`fgemma synth --config 270m`: FunctionGemma-270M's exact shape).\n"
                "      The call below is valid by construction (constrained decoding) but its content is noise;\n"
                "      run scripts/fetch-real-model.sh for the real Gemma 3 270M (docs/real-model.md).\n\n");
  }
  std::printf("model:     %s (%s, kernels %s)%s%s\ntools:     %s (tool_choice %s)\n\n", model_path->c_str(),
              real ? "real Gemma 3 270M" : "q8_0", KernelTargetName(), adapted ? "\nadapter:   " : "", plan.lora.c_str(),
              plan.tools_path.c_str(), plan.tool_choice.c_str());
  for (size_t i = 0; i < plan.utterances.size(); ++i) {
    CallInputs in;
    in.tools_path = plan.tools_path;
    in.utterance = plan.utterances[i];
    in.tool_choice = plan.tool_choice;
    auto request = BuildCallRequest(in);
    if (!request.ok()) return Fail(request.status().ToString());
    auto outcome = caller.value()->Call(request.value());
    for (const auto& w : caller.value()->TakeWarnings()) std::fprintf(stderr, "fgemma: warning: %s\n", w.c_str());
    if (!outcome.ok()) return Fail(outcome.status().ToString());
    PrintOutcome("request " + std::to_string(i + 1) + ": \"" + in.utterance + "\"", outcome.value());
  }
  return 0;
}

const CommandRegistration kDemo(60, [](CLI::App& app) -> std::function<int()> {
  auto a = std::make_shared<DemoArgs>();
  auto* cmd = app.add_subcommand("demo", "Run the phone-actions cartridge on the real Gemma 3 270M when fetched, else the smart-home example on a synthesized FunctionGemma-shaped model");
  auto* utterance = cmd->add_option("utterance", a->utterance, "what the user said");
  AddThreadsOption(cmd, &a->threads, "threads (default: all cores)");
  return [a, utterance] {
    a->utterance_given = utterance->count() > 0;
    return RunDemo(*a);
  };
});

}  // namespace
}  // namespace fgemma::cli
