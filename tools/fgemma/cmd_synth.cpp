// fgemma synth: writes a SYNTH.md checkpoint (config.json + model.safetensors).
#include <cstdio>

#include "command.h"
#include "model/synth.h"

namespace fgemma::cli {
namespace {

struct SynthArgs {
  std::string config, out, dtype = "bf16";
  uint64_t seed = 0;
  size_t lora_rank = 0;
};

const CommandRegistration kSynth(10, [](CLI::App& app) -> std::function<int()> {
  auto args = std::make_shared<SynthArgs>();
  auto* cmd = app.add_subcommand("synth", "Write a deterministic synthetic checkpoint: Gemma 3 weights from a seed, bit for bit (src/model/synth.h)");
  cmd->add_option("--config", args->config, "tiny-mqa, tiny-gqa, mini or 270m")->required();
  cmd->add_option("--seed", args->seed, "seed")->required();
  cmd->add_option("--dtype", args->dtype, "f32 or bf16")->check(CLI::IsMember({"f32", "bf16"}));
  cmd->add_option("--out", args->out, "output directory")->required();
  cmd->add_option("--lora-rank", args->lora_rank,
                  "write instead a PEFT LoRA adapter for the config: this rank, alpha 2 x rank, all seven projections "
                  "(float32; for benchmarks)");
  return [args] {
    auto config = ConfigByName(args->config);
    if (!config.ok()) return Fail(config.status().ToString());
    if (args->lora_rank > 0) {
      Status st = WriteSynthLora(config.value(), args->seed, args->lora_rank, args->out);
      if (!st.ok()) return Fail(st.ToString());
      std::printf("wrote %s (LoRA adapter for %s, r %zu, seed %llu)\n", args->out.c_str(), args->config.c_str(),
                  args->lora_rank, static_cast<unsigned long long>(args->seed));
      return 0;
    }
    Status st = WriteSynthCheckpoint(config.value(), args->seed, DTypeFromName(args->dtype).value(), args->out);
    if (!st.ok()) return Fail(st.ToString());
    std::printf("wrote %s (%s, seed %llu, %s)\n", args->out.c_str(), args->config.c_str(),
                static_cast<unsigned long long>(args->seed), args->dtype.c_str());
    return 0;
  };
});

}  // namespace
}  // namespace fgemma::cli
