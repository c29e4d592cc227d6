// fgemma convert: a Hugging Face directory or GGUF file to a GGUF file llama.cpp loads.
#include <unistd.h>

#include <cstdio>

#include "command.h"
#include "convert/convert.h"
#include "util/process_stats.h"

namespace fgemma::cli {
namespace {

struct ConvertArgs {
  std::string model, type, out, name, lora;
};

// A one-line bar redrawn in place; only drawn when stderr is a terminal (logs stay clean).
class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled) {}
  void Update(uint64_t done, uint64_t total) {
    if (!enabled_ || total == 0) return;
    const int permille = static_cast<int>(done * 1000 / total);
    if (permille == last_) return;  // redraw only when the figure changes
    last_ = permille;
    constexpr int kWidth = 40;
    const int filled = permille * kWidth / 1000;
    std::fprintf(stderr, "\r[%.*s%*s] %5.1f%%  %.1f / %.1f MB", filled, "########################################",
                 kWidth - filled, "", permille / 10.0, done / 1e6, total / 1e6);
    std::fflush(stderr);
  }
  void Finish() {
    if (enabled_ && last_ >= 0) std::fputc('\n', stderr);
  }

 private:
  bool enabled_;
  int last_ = -1;
};

int RunConvert(const ConvertArgs& a) {
  ConvertOptions options;
  if (Status st = ParseConvertTarget(a.type, &options); !st.ok()) return Fail("--type: " + st.message());
  ProgressBar bar(isatty(STDERR_FILENO) != 0);
  options.name = a.name;
  if (!a.lora.empty()) {
    auto spec = ParseLoraSpec(a.lora);
    if (!spec.ok()) return Fail(spec.status().ToString());
    options.lora = spec.value();
  }
  options.progress = [&bar](uint64_t done, uint64_t total) { bar.Update(done, total); };
  options.warning = [](const std::string& w) { std::fprintf(stderr, "fgemma: warning: %s\n", w.c_str()); };
  const double start = NowSeconds();
  auto result = ConvertToGguf(a.model, a.out, options);
  bar.Finish();
  if (!result.ok()) return Fail(result.status().ToString());
  // One line for scripts and tests: peak RSS is the whole process's, conversion included.
  std::printf("wrote %s: %s, %.1f MB, %.2f s, peak RSS %.1f MB\n", result->path.c_str(),
              ConvertTargetName(result->type, options.preset).c_str(),
              result->file_bytes / 1e6, NowSeconds() - start, PeakRssBytes() / 1e6);
  return 0;
}

const CommandRegistration kConvert(60, [](CLI::App& app) -> std::function<int()> {
  auto a = std::make_shared<ConvertArgs>();
  auto* cmd = app.add_subcommand("convert", "Convert a Hugging Face directory or GGUF file to a GGUF file (llama.cpp layout)");
  cmd->add_option("--model", a->model, "model directory, .safetensors or .gguf")->required();
  cmd->add_option("--type", a->type, WeightTypeNames() + ", or llama.cpp's preset q4_K_M / q5_K_M")->required();
  cmd->add_option("--out", a->out, "output .gguf file")->required();
  cmd->add_option("--lora", a->lora,
                  "PEFT LoRA adapter directory merged into the weights (in float32) before they are written or "
                  "quantized; DIR:SCALE multiplies its update");
  cmd->add_option("--name", a->name, "general.name (default: the model directory's name, or the GGUF source's)");
  return [a] { return RunConvert(*a); };
});

}  // namespace
}  // namespace fgemma::cli
