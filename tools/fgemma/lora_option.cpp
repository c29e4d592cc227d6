#include "lora_option.h"

namespace fgemma::cli {

void AddLoraOption(CLI::App* cmd, std::string* spec) {
  cmd->add_option("--lora", *spec,
                  "PEFT LoRA adapter directory (adapter_config.json + adapter_model.safetensors), applied at run "
                  "time over the base; DIR:SCALE multiplies its update (default 1)");
}


}  // namespace fgemma::cli
